/**
 * Reading `iptables-save -t <table>` back (dataplane.md §5): only as much as the table's diff
 * needs — the hash comments of our chains' rules, and our hashed rules in kernel chains with
 * their positions. Rules are never parsed beyond the hash.
 */
import { CHAIN_PREFIX } from '../chain-names.ts';

/** What a kernel chain (`FORWARD`, …) holds of ours. */
export interface KernelChainState {
  /** Our hashed rules in this kernel chain, as `iptables-save` printed them, in order. */
  readonly lines: string[];
  readonly hashes: string[];
  /** Index of each of those rules among all rules of the chain. */
  readonly positions: number[];
}

const HASH_RE = /--comment "?cali:([a-zA-Z0-9_-]+)"?/;

/**
 * Parses `iptables-save -t <table>` output: hashes of every owned (`cali-`) chain, and our
 * hashed rules in the kernel chains we hook (plus any other non-owned chain that holds a rule
 * with our hash, left over from an older layout). Rules are not parsed beyond the hash.
 */
export function parseSave(
  text: string,
  hookedChains: ReadonlySet<string>,
): { owned: Map<string, string[]>; kernel: Map<string, KernelChainState> } {
  const owned = new Map<string, string[]>();
  const kernel = new Map<string, KernelChainState>();
  const counts = new Map<string, number>();
  for (const chain of hookedChains) kernel.set(chain, { lines: [], hashes: [], positions: [] });
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line.startsWith(':')) {
      const name = line.slice(1, line.indexOf(' ') < 0 ? undefined : line.indexOf(' '));
      if (name.startsWith(CHAIN_PREFIX)) owned.set(name, []);
      continue;
    }
    if (!line.startsWith('-A ')) continue;
    const end = line.indexOf(' ', 3);
    const chain = line.slice(3, end < 0 ? undefined : end);
    const m = HASH_RE.exec(line);
    if (chain.startsWith(CHAIN_PREFIX)) {
      let list = owned.get(chain);
      if (list === undefined) owned.set(chain, (list = []));
      list.push(m?.[1] ?? '');
    } else {
      const index = counts.get(chain) ?? 0;
      counts.set(chain, index + 1);
      if (m === null) continue;
      let k = kernel.get(chain);
      if (k === undefined) kernel.set(chain, (k = { lines: [], hashes: [], positions: [] }));
      k.lines.push(line);
      k.hashes.push(m[1]!);
      k.positions.push(index);
    }
  }
  return { owned, kernel };
}

/** `[packets:bytes] -A <chain> … --comment "cali:<hash>" …` → its parts; undefined for other lines. */
export function parseCounterLine(line: string): { packets: number; bytes: number; chain: string; hash: string } | undefined {
  const m = /^\[(\d+):(\d+)\] -A (\S+) .*?--comment "?cali:([A-Za-z0-9_-]+)"?/.exec(line);
  if (m === null) return undefined;
  return { packets: Number(m[1]), bytes: Number(m[2]), chain: m[3]!, hash: m[4]! };
}
