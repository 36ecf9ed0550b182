/**
 * The iptables data model the renderer produces and the `IptablesTable` programs.
 *
 * A rule is kept as iptables-restore fragments (match text, action text, comments) rather than
 * parsed structure: the table never needs to understand a rule, only to write it and to compare
 * its hash with what `iptables-save` reports.
 */
import type { RuleTag } from './drop-log.ts';

/** One iptables rule: `[-m comment …]* <match> <action>`. */
export interface IptablesRule {
  /** Match fragments, already joined (`-p tcp -m multiport --destination-ports 80`); may be empty. */
  readonly match: string;
  /** Target (`-j ACCEPT`, `-g cali-fw-cali1234`, `-j MARK --set-xmark 0x10000/0x10000`). */
  readonly action: string;
  /** Extra comments after the hash comment; sanitised when rendered. */
  readonly comments?: readonly string[];
  /** The decision this rule carries, for counters and the drop log (never rendered: no effect on the hash). */
  readonly tag?: RuleTag;
}

/** A chain Tessera owns: its name (`cali-…`, ≤ 28 characters) and rules in order. */
export interface Chain {
  readonly name: string;
  readonly rules: readonly IptablesRule[];
}

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

/**
 * The rule body after `-A <chain>` / `-I <chain> <n>` / `-R <chain> <n>`, with `hashFragment`
 * in the hash comment's place: `HASH` when hashing, `-m comment --comment "cali:<h>"` when
 * writing. Empty fragments are omitted so spacing is canonical.
 */
export function ruleBody(rule: IptablesRule, hashFragment: string): string {
  const rest = ruleTail(rule);
  return rest === '' ? hashFragment : `${hashFragment} ${rest}`;
}

/** Everything after the hash comment: `[-m comment …]* <match> <action>` (computed once per rule). */
export function ruleTail(rule: IptablesRule): string {
  let out = '';
  if (rule.comments !== undefined) for (const c of rule.comments) out = out === '' ? commentFragment(c) : `${out} ${commentFragment(c)}`;
  if (rule.match !== '') out = out === '' ? rule.match : `${out} ${rule.match}`;
  if (rule.action !== '') out = out === '' ? rule.action : `${out} ${rule.action}`;
  return out;
}

/** `-m comment --comment "cali:<hash>"`. */
export function hashCommentFragment(hash: string): string {
  return `-m comment --comment "${RULE_HASH_PREFIX}${hash}"`;
}
