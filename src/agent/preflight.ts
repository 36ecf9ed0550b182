/**
 * Whether this host can be programmed at all, asked before the agent writes anything: a node
 * without iptables/ipset, or a container without NET_ADMIN, gets one line saying which and
 * why — not a stack trace from the first apply.
 */
import type { CommandRunner, IptablesBackend } from '../dataplane/index.ts';

/**
 * Why this host cannot be programmed with `backend`, or undefined when it can: each tool must
 * exist and `ipset list -n` / `iptables-<backend>-save -t filter` must succeed (they need
 * NET_ADMIN).
 */
export async function preflight(runner: CommandRunner, backend: IptablesBackend = 'nft'): Promise<string | undefined> {
  const checks: Array<[string, string[]]> = [
    [`iptables-${backend}-restore`, ['--version']],
    [`iptables-${backend}-save`, ['-t', 'filter']],
    ['ipset', ['list', '-n']],
  ];
  for (const [cmd, args] of checks) {
    const r = await runner.run(cmd, args, { timeoutMs: 10_000 });
    if (r.code === 127 || /ENOENT|not found|No such file/i.test(r.stderr) && r.code !== 0) {
      return `${cmd} is not installed (or not on PATH): install iptables and ipset`;
    }
    if (r.code !== 0) {
      const why = r.stderr.trim().split('\n')[0] ?? '';
      return `${cmd} ${args.join(' ')} failed (exit ${r.code}): ${why} — the agent needs root or CAP_NET_ADMIN`;
    }
  }
  return undefined;
}
