/**
 * The neutral chain model (`../chain.ts`) as iptables-restore text: what the `IptablesTable`
 * writes, hashes and compares with what `iptables-save` reports.
 *
 * - Byte for byte what Tessera has always written: the rule hashes of a running node, and so
 *   whether an upgrade rewrites its chains, depend on it (render goldens in `src/cli/testdata`).
 * - A rule's text is `[-m comment …]* <match> <action>` after the hash comment; empty parts are
 *   omitted so spacing is canonical.
 * - Values were validated when the match was built (`MatchBuilder`); comments are sanitised here.
 */
import type { Action } from '../action.ts';
import type { ChainRule } from '../chain.ts';
import type { Match, MatchCriterion } from '../match.ts';
import type { PortRange } from '../../proto/index.ts';

/** Felix: characters outside this class are replaced in comments. */
const COMMENT_UNSAFE = /[^A-Za-z0-9_ @%+=:,./-]/g;
/** Kernel `XT_MAX_COMMENT_LEN` 256 including the NUL. */
export const MAX_COMMENT_LENGTH = 255;

/** A comment as written: unsafe characters replaced by `_`, cut to 255 characters. */
export function sanitizeComment(text: string): string {
  return text.replace(COMMENT_UNSAFE, '_').slice(0, MAX_COMMENT_LENGTH);
}

/** `-m comment --comment "…"` for one sanitised comment. */
export function commentFragment(text: string): string {
  return `-m comment --comment "${sanitizeComment(text)}"`;
}

/** The prefix of the hash comment's value (Felix `RuleHashPrefix`). */
export const RULE_HASH_PREFIX = 'cali:';

/** `-m comment --comment "cali:<hash>"`. */
export function hashCommentFragment(hash: string): string {
  return `-m comment --comment "${RULE_HASH_PREFIX}${hash}"`;
}

/**
 * `0x<bits>`, memoised: a ruleset uses a handful of mark values in most of its rules, and this
 * runs for each of them whenever a chain is rendered.
 */
const HEX = new Map<number, string>();
function hex(n: number): string {
  let s = HEX.get(n);
  if (s === undefined) HEX.set(n, (s = `0x${(n >>> 0).toString(16)}`));
  return s;
}

function portsText(ports: readonly PortRange[]): string {
  let out = '';
  for (const p of ports) {
    const one = p.first === p.last ? String(p.first) : `${p.first}:${p.last}`;
    out = out === '' ? one : `${out},${one}`;
  }
  return out;
}

/** One criterion's fragment (`-m multiport --destination-ports 80`). */
export function criterionText(c: MatchCriterion): string {
  switch (c.kind) {
    case 'protocol':
      return `${c.negate ? '! ' : ''}-p ${c.protocol}`;
    case 'interface':
      return `${c.direction === 'in' ? '-i' : '-o'} ${c.name}`;
    case 'net':
      return `${c.negate ? '! ' : ''}${c.side === 'src' ? '--source' : '--destination'} ${c.cidr}`;
    case 'ports':
      return `-m multiport ${c.negate ? '! ' : ''}${c.side === 'src' ? '--source-ports' : '--destination-ports'} ${portsText(c.ports)}`;
    case 'ip-set':
      return `-m set ${c.negate ? '! ' : ''}--match-set ${c.name} ${c.namedPort ? `${c.side},${c.side}` : c.side}`;
    case 'icmp': {
      const value = c.code === undefined ? String(c.type) : `${c.type}/${c.code}`;
      const not = c.negate ? '! ' : '';
      return c.ipVersion === 4 ? `-m icmp ${not}--icmp-type ${value}` : `-m icmp6 ${not}--icmpv6-type ${value}`;
    }
    case 'mark':
      return c.set ? `-m mark --mark ${hex(c.bits)}/${hex(c.bits)}` : `-m mark --mark 0x0/${hex(c.bits)}`;
    case 'conntrack':
      return `-m conntrack ${c.negate === true ? '! ' : ''}--ctstate ${c.states.join(',')}`;
    case 'dest-port':
      return `-m ${c.protocol} --dport ${c.port}`;
    case 'rate-limit':
      return `-m hashlimit --hashlimit-upto ${c.rate} --hashlimit-burst ${c.burst} --hashlimit-name ${c.bucket}`;
    case 'rpf-failed':
      return '-m rpfilter --invert --validmark';
    case 'packet-rate':
      return `-m limit --limit ${c.rate}/sec --limit-burst ${c.burst}`;
    case 'tcp-syn':
      // The long form iptables-save prints for `--syn` (Felix writes it the same way).
      return '-m tcp --tcp-flags FIN,SYN,RST,ACK SYN';
    case 'connlimit':
      return `-m connlimit --connlimit-above ${c.above} --connlimit-mask 0`;
  }
}

/** Match fragments, joined (`-p tcp -m multiport --destination-ports 80`); '' for every packet. */
export function matchText(match: Match): string {
  if (match.length === 1) return criterionText(match[0]!);
  const parts = scratch();
  for (const c of match) parts.push(criterionText(c));
  return parts.join(' ');
}

/**
 * One array reused for the fragments of every rule (rendering is synchronous and never nested),
 * so rendering a ruleset allocates only its text: a fresh array per rule made the young
 * generation fill, and collect, several times more often while the ruleset was being written.
 */
const PARTS: string[] = [];
function scratch(): string[] {
  PARTS.length = 0;
  return PARTS;
}

/** The target (`-j ACCEPT`, `-g cali-fw-cali1234`, `-j MARK --set-xmark 0x10000/0x10000`). */
export function actionText(action: Action): string {
  switch (action.type) {
    case 'accept':
      return '-j ACCEPT';
    case 'drop':
      return '-j DROP';
    case 'reject':
      return action.with === undefined ? '-j REJECT' : `-j REJECT --reject-with ${action.with}`;
    case 'return':
      return '-j RETURN';
    case 'notrack':
      return '-j NOTRACK';
    case 'jump':
      return `-j ${action.target}`;
    case 'goto':
      return `-g ${action.target}`;
    case 'set-mark':
      return `-j MARK --set-xmark ${hex(action.bits)}/${hex(action.bits)}`;
    case 'clear-mark':
      // iptables-save shows it as `MARK and <~bits>`.
      return `-j MARK --set-xmark 0x0/${hex(action.bits)}`;
    case 'log':
      return `-j LOG --log-prefix ${action.prefix} --log-level ${action.level}`;
    case 'nflog':
      return `-j NFLOG --nflog-group ${action.group} --nflog-prefix ${action.prefix} --nflog-size ${action.size} --nflog-threshold ${action.threshold}`;
  }
}

/**
 * The rule body after `-A <chain>` / `-I <chain> <n>` / `-R <chain> <n>`, with `hashFragment`
 * in the hash comment's place: `HASH` when hashing, `-m comment --comment "cali:<h>"` when
 * writing.
 */
export function ruleBody(rule: ChainRule, hashFragment: string): string {
  const rest = ruleTail(rule);
  return rest === '' ? hashFragment : `${hashFragment} ${rest}`;
}

/** Everything after the hash comment: `[-m comment …]* <match> <action>` (computed once per rule). */
export function ruleTail(rule: ChainRule): string {
  // One join: a flat string, where concatenation would leave a rope of every fragment for the
  // table to hold until something flattens it.
  const parts = scratch();
  if (rule.comments !== undefined) for (const c of rule.comments) parts.push(commentFragment(c));
  for (const c of rule.match) parts.push(criterionText(c));
  parts.push(actionText(rule.action));
  return parts.join(' ');
}

/** What the drop log's digest covers of a drop rule: its match and action as written. */
export function ruleDigestText(match: Match, action: Action): { readonly match: string; readonly action: string } {
  return { match: matchText(match), action: actionText(action) };
}
