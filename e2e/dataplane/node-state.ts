/**
 * A network namespace's whole iptables and IP set state as comparable text, for the tests that
 * prove something (`tessera cleanup`, a refused agent) left a node exactly as it was.
 */
import { execFileSync } from 'node:child_process';

/** Runs `args` inside `ns` (no shell), `input` on stdin; returns stdout. */
export function inNs(ns: string, args: readonly string[], input?: string): string {
  return execFileSync('ip', ['netns', 'exec', ns, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
}

/**
 * Every table of both iptables backends in both families (comment lines dropped, counters
 * zeroed: packets move them) and every IP set with its members (`ipset save`, sorted). Reading
 * changes nothing: iptables-legacy-save without `-t` creates no table.
 */
export function nodeStateSnapshot(ns: string): string {
  const parts: string[] = [];
  for (const cmd of ['iptables-nft-save', 'ip6tables-nft-save', 'iptables-legacy-save', 'ip6tables-legacy-save']) {
    const text = inNs(ns, [cmd])
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => l.replace(/\[\d+:\d+\]/g, '[0:0]'))
      .join('\n');
    parts.push(`== ${cmd}\n${text}`);
  }
  parts.push(`== ipset save\n${inNs(ns, ['ipset', 'save']).split('\n').sort().join('\n')}`);
  return parts.join('\n');
}
