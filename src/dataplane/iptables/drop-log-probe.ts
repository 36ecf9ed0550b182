/**
 * Whether this node's kernel and iptables take the drop log's rule (NFLOG, hashlimit), tried
 * once at start-up on a scratch chain that is removed again.
 *
 * Why: the drop log renders a rule before every drop, in every endpoint chain. Where the kernel
 * lacks `xt_NFLOG` or `xt_hashlimit` (or iptables an option), iptables-restore would reject
 * every such chain and each would be programmed as its fail-closed stand-in: every pod on the
 * node cut off, for a log. Probed first, the agent instead runs without the drop log and says
 * so.
 */
import type { CommandRunner } from '../command-runner.ts';
import { dropLogTarget, type DropLogOptions } from '../drop-log.ts';
import type { IptablesBackend } from './iptables-table.ts';
import { matchText, actionText } from './rule-text.ts';

const PROBE_CHAIN = 'cali-tessera-droplog-probe';

/** Undefined when the rule was taken; else iptables-restore's error. */
export async function probeDropLog(runner: CommandRunner, backend: IptablesBackend, ipVersion: 4 | 6, opts: DropLogOptions): Promise<string | undefined> {
  const restore = `${ipVersion === 4 ? 'iptables' : 'ip6tables'}-${backend}-restore`;
  const log = dropLogTarget(opts)(PROBE_CHAIN, 1, { match: '', action: '-j DROP', tag: { kind: 'no-profile-matched' } });
  const rule = `${matchText(log.match)} ${actionText(log.action)}`;
  const args = ['--noflush', '--wait', '10'];
  const res = await runner.run(restore, args, { stdin: `*filter\n:${PROBE_CHAIN} - [0:0]\n-A ${PROBE_CHAIN} ${rule}\nCOMMIT\n` });
  // Removed whether or not it was taken (a half-made chain must not stay).
  await runner.run(restore, args, { stdin: `*filter\n:${PROBE_CHAIN} - [0:0]\n-X ${PROBE_CHAIN}\nCOMMIT\n` });
  return res.code === 0 ? undefined : `${restore} (${res.code}): ${res.stderr.trim() || res.stdout.trim()}`;
}
