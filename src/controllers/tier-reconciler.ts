/**
 * The tiers Calico creates itself (`kube-admin` 1,000 Pass; `default` 1,000,000 Deny;
 * `kube-baseline` 10,000,000 Pass — api/tiers.ts), created at start-up when absent. An
 * existing tier is left as it is: an admin may have tuned it, and the API's own rules
 * keep the well-known orders fixed.
 */
import type { Tier } from '../api/types.ts';
import { API_VERSION } from '../api/types.ts';
import { WELL_KNOWN_TIERS } from '../api/tiers.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Writer } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './ownership.ts';

export function defaultTiers(): Tier[] {
  return WELL_KNOWN_TIERS.map((t) => ({
    apiVersion: API_VERSION,
    kind: 'Tier',
    metadata: { name: t.name, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
    spec: { order: t.order, defaultAction: t.defaultAction },
  }));
}

/** Creates each default tier that does not exist. */
export async function ensureDefaultTiers(writer: Writer, log: Logger): Promise<void> {
  for (const tier of defaultTiers()) {
    if (await writer.createIfAbsent(tier)) log.info({ kind: 'Tier', name: tier.metadata.name }, 'created default tier');
  }
}
