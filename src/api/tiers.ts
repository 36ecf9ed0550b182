/**
 * The tiers Calico creates itself, and the order and default action each must keep.
 *
 * From `api/pkg/apis/projectcalico/v3/tier.go` (constants and the CEL rules on Tier), HEAD:
 * `kube-admin` 1,000 Pass; `default` 1,000,000 Deny; `kube-baseline` 10,000,000 Pass.
 * Policies without `spec.tier` belong to `default`.
 */
import type { Action } from './types.ts';

export const DEFAULT_TIER_NAME = 'default';

export interface WellKnownTier {
  readonly name: string;
  readonly order: number;
  readonly defaultAction: Extract<Action, 'Deny' | 'Pass'>;
}

export const WELL_KNOWN_TIERS: readonly WellKnownTier[] = [
  { name: 'kube-admin', order: 1_000, defaultAction: 'Pass' },
  { name: DEFAULT_TIER_NAME, order: 1_000_000, defaultAction: 'Deny' },
  { name: 'kube-baseline', order: 10_000_000, defaultAction: 'Pass' },
];

export function wellKnownTier(name: string): WellKnownTier | undefined {
  return WELL_KNOWN_TIERS.find((t) => t.name === name);
}
