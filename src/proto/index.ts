/** The calc graph → dataplane message contract. */
export * from './dataplane-messages.ts';
export * from './rule-ip-version.ts';
