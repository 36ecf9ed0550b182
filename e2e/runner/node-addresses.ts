/**
 * A scenario node's own addresses by family ("Hosts as endpoints": its `ip` of either family,
 * and `ip6` beside an IPv4 `ip`), as both cluster runners place them and bind probes to them.
 */
import { nodeAddress, type ScenarioNode } from './scenario.ts';

/** At most one address per family. */
export interface NodeAddresses {
  readonly ipv4?: string;
  readonly ipv6?: string;
}

export function scenarioNodeAddresses(n: Pick<ScenarioNode, 'ip' | 'ip6'>): NodeAddresses {
  const [ipv4, ipv6] = [nodeAddress(n, 4), nodeAddress(n, 6)];
  return { ...(ipv4 === undefined ? {} : { ipv4 }), ...(ipv6 === undefined ? {} : { ipv6 }) };
}
