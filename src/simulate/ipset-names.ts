/**
 * `IpSetNames`: what each IP set id means, for people. The proto output carries ids only
 * (rules reference `s:…`/`n:…` sets); explain output should say "source selector
 * `app == "api"`". The names are found by running the resources through the calc graph's
 * own UpdateProcessor and RuleScanner (the code that mints the ids), collecting each
 * active set's selector and named port — never by re-deriving ids.
 *
 * Likewise the rules of a ClusterNetworkPolicy, which the graph holds converted (one CNP rule
 * may become several, or a fail-closed Deny): `ruleName` gives the CNP rule a converted rule
 * came from — its `name` and its place (`spec.egress[1]`) — from the annotations the converter
 * writes, as the same UpdateProcessor holds them.
 */
import type { SimResource } from './cluster-objects.ts';
import type { PolicyId } from '../proto/index.ts';
import { CNP_RULE_DIRECTION_ANNOTATION, CNP_RULE_FAILED_ANNOTATION, CNP_RULE_INDEX_ANNOTATION, CNP_RULE_NAME_ANNOTATION } from '../convert/cluster-network-policy-converter.ts';
import type { IPSetData } from '../calc/ipset-data.ts';
import { RuleScanner } from '../calc/rule-scanner.ts';
import { UpdateProcessor } from '../calc/update-processor.ts';

export class IpSetNames {
  readonly #names = new Map<string, string>();
  readonly #processor: UpdateProcessor;

  constructor(resources: Iterable<SimResource>) {
    const add = (d: IPSetData): void => {
      if (d.service !== undefined) {
        this.#names.set(d.id, `Service ${d.service} (${d.includePorts ? 'endpoint addresses and ports' : 'endpoint addresses'})`);
        return;
      }
      const sel = d.selector.toString();
      this.#names.set(d.id, d.namedPort === undefined ? sel : `port "${d.namedPort.name}" (${d.namedPort.protocol}) of ${sel}`);
    };
    const scanner = new RuleScanner({
      onIPSetActive: add,
      onIPSetInactive: () => undefined,
      onPolicyUpdate: () => undefined,
      onPolicyRemove: () => undefined,
      onProfileUpdate: () => undefined,
      onProfileRemove: () => undefined,
    });
    const processor = new UpdateProcessor({ onInvalid: () => undefined });
    this.#processor = processor;
    const all = [...resources];
    // Nodes first: a CNP's `nodes` peer is converted from the Nodes held.
    for (const resource of all) if (resource.kind === 'Node') processor.process({ op: 'upsert', resource });
    for (const resource of all) {
      if (resource.kind !== 'NetworkPolicy' && resource.kind !== 'GlobalNetworkPolicy' && resource.kind !== 'Profile' && resource.kind !== 'ClusterNetworkPolicy') continue;
      for (const u of processor.process({ op: 'upsert', resource })) {
        if (u.kind === 'policy' && u.value !== null) scanner.updatePolicy(u.key, u.value);
        else if (u.kind === 'profile' && u.value !== null) scanner.updateProfile(u.key, u.value);
      }
    }
  }

  /**
   * The CNP rule behind rule `index` of `direction` of the policy `id`: `rule "<name>"
   * (spec.egress[1])`, or `spec.egress[1]` for an unnamed one, `, failed closed` added for a
   * fail-closed stand-in; undefined for any other policy.
   */
  ruleName(id: PolicyId, direction: 'ingress' | 'egress', index: number): string | undefined {
    if (id.kind !== 'KubernetesClusterNetworkPolicy') return undefined;
    const gnp = this.#processor.convertedClusterNetworkPolicy(id.name);
    const a = gnp?.spec[direction]?.[index]?.metadata?.annotations;
    if (a === undefined) return undefined;
    const where = `spec.${a[CNP_RULE_DIRECTION_ANNOTATION] ?? direction}[${a[CNP_RULE_INDEX_ANNOTATION] ?? '?'}]`;
    const name = a[CNP_RULE_NAME_ANNOTATION];
    const failed = a[CNP_RULE_FAILED_ANNOTATION] === undefined ? '' : ', failed closed';
    return name === undefined ? `${where}${failed}` : `rule ${JSON.stringify(name)} (${where}${failed})`;
  }

  /** The selector (and named port) behind `id`, or the id itself when unknown. */
  describe(id: string): string {
    return this.#names.get(id) ?? id;
  }
}
