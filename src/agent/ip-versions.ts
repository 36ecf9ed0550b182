/**
 * Which IP families the agent programs: `--ip-versions` when given, else the families the node
 * itself has addresses in.
 *
 * Felix programs IPv4 always and IPv6 when `Ipv6Support` (default true) and the kernel supports
 * it. Tessera reads the node instead: the families of its **global-scope addresses**
 * (`ip -j addr show scope global`). The command runs through the agent's `CommandRunner`, so
 * it reads the namespace the agent programs — the host network namespace of the DaemonSet's pod
 * (`hostNetwork: true`), or the `--netns` namespace in tests. Why addresses:
 *
 * - a dual-stack node has a global IPv6 address (the one its pods' traffic is routed by);
 *   an IPv4-only node has none. Link-local (`fe80::/10`) and loopback addresses have link or
 *   host scope and do not count: every Linux host has them, dual-stack or not;
 * - it needs nothing but the kernel (no RBAC on Node objects, no API call before start), and
 *   the answer does not depend on which pods happen to exist when the agent starts.
 *
 * When the command fails (no `ip` binary) or finds no global address, the agent programs IPv4
 * (the DataplaneDriver's default) and says why. An endpoint with addresses in a family the
 * node does not program is reported by `UnenforcedFamilyReporter`, never silently ignored.
 */
import type { CommandRunner } from '../dataplane/index.ts';

export type IpVersion = 4 | 6;

/** How the families were chosen, for the start-up log line. */
export interface IpVersionChoice {
  /** Sorted, without duplicates, never empty. */
  readonly ipVersions: readonly IpVersion[];
  readonly source: 'flag' | 'detected' | 'fallback';
  /** `detected`: the global addresses found (`<addr>/<len> <interface>`). */
  readonly addresses?: readonly string[];
  /** `fallback`: why nothing was detected. */
  readonly reason?: string;
}

/** The driver's default when nothing says otherwise. */
const FALLBACK: readonly IpVersion[] = [4];

/** `"4"`, `"6"`, `"4,6"` (any order, duplicates allowed) → sorted unique families. */
export function parseIpVersions(text: string): IpVersion[] {
  const parts = text.split(',').map((p) => p.trim());
  const out = new Set<IpVersion>();
  for (const p of parts) {
    if (p !== '4' && p !== '6') throw new RangeError(`ip versions ${JSON.stringify(text)}: each must be 4 or 6, not ${JSON.stringify(p)} (e.g. "4", "6" or "4,6")`);
    out.add(Number(p) as IpVersion);
  }
  return [...out].sort();
}

interface IpAddrJson {
  readonly ifname?: string;
  readonly addr_info?: ReadonlyArray<{ readonly family?: string; readonly local?: string; readonly prefixlen?: number; readonly scope?: string }>;
}

/** The families of the node's global-scope addresses (see the file comment). */
export async function detectIpVersions(runner: CommandRunner): Promise<IpVersionChoice> {
  const res = await runner.run('ip', ['-j', 'addr', 'show', 'scope', 'global'], { timeoutMs: 10_000 });
  if (res.code !== 0) {
    const why = res.stderr.trim().split('\n')[0] ?? '';
    return { ipVersions: FALLBACK, source: 'fallback', reason: `ip -j addr show scope global failed (exit ${res.code}): ${why}` };
  }
  let links: IpAddrJson[];
  try {
    links = JSON.parse(res.stdout || '[]') as IpAddrJson[];
  } catch (err) {
    return { ipVersions: FALLBACK, source: 'fallback', reason: `ip -j addr show scope global: unparseable output (${(err as Error).message})` };
  }
  const found = new Set<IpVersion>();
  const addresses: string[] = [];
  for (const link of links) {
    for (const a of link.addr_info ?? []) {
      // `scope global` already filters; the check keeps a hand-run or older `ip` honest.
      if (a.scope !== undefined && a.scope !== 'global') continue;
      const v = a.family === 'inet' ? 4 : a.family === 'inet6' ? 6 : undefined;
      if (v === undefined) continue;
      found.add(v);
      addresses.push(`${a.local ?? '?'}/${a.prefixlen ?? '?'} ${link.ifname ?? '?'}`);
    }
  }
  if (found.size === 0) return { ipVersions: FALLBACK, source: 'fallback', reason: 'the node has no global-scope address' };
  return { ipVersions: [...found].sort(), source: 'detected', addresses };
}
