/**
 * The tiers Calico creates itself (api/tiers.ts: `kube-admin` 1,000 Pass; `default`
 * 1,000,000 Deny; `kube-baseline` 10,000,000 Pass) as projectcalico.org/v3 objects. Like the
 * conversions, they are generated once for both sides: the controllers create them (adding
 * their own marks: the managed-by label and the tier finalizer, controllers/tier-reconciler.ts)
 * and the simulator assumes them present, as every Calico cluster has them.
 *
 * Guarantees: one Tier per well-known tier, in api/tiers.ts's order, with its fixed order and
 * default action and nothing else; a fresh array of fresh objects on every call.
 */
import { WELL_KNOWN_TIERS } from '../api/tiers.ts';
import { API_VERSION, type Tier } from '../api/types.ts';

export function defaultTiers(): Tier[] {
  return WELL_KNOWN_TIERS.map((t) => ({
    apiVersion: API_VERSION,
    kind: 'Tier',
    metadata: { name: t.name },
    spec: { order: t.order, defaultAction: t.defaultAction },
  }));
}
