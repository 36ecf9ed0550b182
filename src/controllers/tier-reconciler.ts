/**
 * The tiers Calico creates itself (`kube-admin` 1,000 Pass; `default` 1,000,000 Deny;
 * `kube-baseline` 10,000,000 Pass — api/tiers.ts), and the finalizer that keeps a Tier from
 * disappearing while policies still name it (tier-controller.ts).
 *
 * The default tiers are created at start-up when absent, and re-created by the tier
 * controller whenever one goes missing later. An existing tier is left as it is: an admin
 * may have tuned it, and the API's own rules keep the well-known orders fixed.
 */
import type { Tier } from '../api/types.ts';
import { DEFAULT_TIER_NAME } from '../api/tiers.ts';
import { defaultTiers } from '../convert/default-tiers.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Writer, WrittenObject } from './object-writer.ts';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './ownership.ts';

/**
 * Calico's own tier finalizer (api/pkg/apis/projectcalico/v3/tier.go, `TierFinalizer`), so a
 * cluster moving between Calico's kube-controllers and Tessera's keeps one finalizer with one
 * meaning: removed only when no policy names the tier.
 */
export const TIER_FINALIZER = 'projectcalico.org/tier-controller';

/** A default tier (convert/default-tiers.ts) as the controllers create it: marked as theirs, already carrying the finalizer. */
export function defaultTierToCreate(tier: Tier): WrittenObject {
  return { ...tier, metadata: { ...tier.metadata, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, finalizers: [TIER_FINALIZER] } } as WrittenObject;
}

/** Creates each default tier that does not exist. */
export async function ensureDefaultTiers(writer: Writer, log: Logger): Promise<void> {
  for (const tier of defaultTiers()) {
    if (await writer.createIfAbsent(defaultTierToCreate(tier))) log.info({ kind: 'Tier', name: tier.metadata.name }, 'created default tier');
  }
}

/** The tier a NetworkPolicy or GlobalNetworkPolicy object belongs to (`spec.tier`, defaulted). */
export function policyTier(obj: { spec?: unknown }): string {
  const tier = (obj.spec as { tier?: unknown } | undefined)?.tier;
  return typeof tier === 'string' && tier !== '' ? tier : DEFAULT_TIER_NAME;
}
