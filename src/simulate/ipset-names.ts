/**
 * `IpSetNames`: what each IP set id means, for people. The proto output carries ids only
 * (rules reference `s:…`/`n:…` sets); explain output should say "source selector
 * `app == "api"`". The names are found by running the resources through the calc graph's
 * own UpdateProcessor and RuleScanner (the code that mints the ids), collecting each
 * active set's selector and named port — never by re-deriving ids.
 */
import type { SimResource } from './cluster-objects.ts';
import type { IPSetData } from '../calc/ipset-data.ts';
import { RuleScanner } from '../calc/rule-scanner.ts';
import { UpdateProcessor } from '../calc/update-processor.ts';

export class IpSetNames {
  readonly #names = new Map<string, string>();

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
    for (const resource of resources) {
      if (resource.kind !== 'NetworkPolicy' && resource.kind !== 'GlobalNetworkPolicy' && resource.kind !== 'Profile') continue;
      for (const u of processor.process({ op: 'upsert', resource })) {
        if (u.kind === 'policy' && u.value !== null) scanner.updatePolicy(u.key, u.value);
        else if (u.kind === 'profile' && u.value !== null) scanner.updateProfile(u.key, u.value);
      }
    }
  }

  /** The selector (and named port) behind `id`, or the id itself when unknown. */
  describe(id: string): string {
    return this.#names.get(id) ?? id;
  }
}
