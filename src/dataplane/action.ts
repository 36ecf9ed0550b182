/**
 * What a rule does with a packet it matches, as data (Felix `generictables.Action`): the
 * renderer says *what*, a backend says how (`iptables/rule-text.ts` writes `-j ACCEPT`,
 * `-g cali-fw-…`, `-j MARK --set-xmark …`).
 *
 * Mark bits are whole values (`MARK_ACCEPT`, …, marks.ts); chain targets are chain names.
 */

export type Action =
  | { readonly type: 'accept' }
  | { readonly type: 'drop' }
  /** Refuse the packet; with `with`, by that ICMP error or TCP reset (`tcp-reset`). */
  | { readonly type: 'reject'; readonly with?: 'tcp-reset' }
  /** Back to the calling chain. */
  | { readonly type: 'return' }
  /** Walk `target`, then come back. */
  | { readonly type: 'jump'; readonly target: string }
  /** Walk `target` and never come back here. */
  | { readonly type: 'goto'; readonly target: string }
  /** Set every bit of `bits` in the packet mark, leaving the others. */
  | { readonly type: 'set-mark'; readonly bits: number }
  /** Clear every bit of `bits` in the packet mark, leaving the others. */
  | { readonly type: 'clear-mark'; readonly bits: number }
  /** Do not track the packet in conntrack (raw table only; Felix `NoTrackAction`). */
  | { readonly type: 'notrack' }
  /** Kernel log line (Felix's `Log` rule action), at syslog level `level`. */
  | { readonly type: 'log'; readonly prefix: string; readonly level: number }
  /** Copy `size` bytes of the packet to NFLOG group `group`, sent at once when `threshold` is 1. */
  | { readonly type: 'nflog'; readonly group: number; readonly prefix: string; readonly size: number; readonly threshold: number };

export const ACCEPT: Action = Object.freeze({ type: 'accept' });
export const DROP: Action = Object.freeze({ type: 'drop' });
export const REJECT: Action = Object.freeze({ type: 'reject' });
export const RETURN: Action = Object.freeze({ type: 'return' });
export const NOTRACK: Action = Object.freeze({ type: 'notrack' });
/** Refuse with a TCP reset (Felix `RejectWithTCPReset`). */
export const REJECT_TCP_RESET: Action = Object.freeze({ type: 'reject', with: 'tcp-reset' });

export function jump(target: string): Action {
  return { type: 'jump', target };
}

export function goTo(target: string): Action {
  return { type: 'goto', target };
}

export function setMark(bits: number): Action {
  return { type: 'set-mark', bits };
}

export function clearMark(bits: number): Action {
  return { type: 'clear-mark', bits };
}

/** The chain a `jump` or `goto` walks; undefined for every other action. */
export function actionTarget(action: Action): string | undefined {
  return action.type === 'jump' || action.type === 'goto' ? action.target : undefined;
}
