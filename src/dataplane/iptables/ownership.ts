/**
 * Who owns the `cali-` chains and `cali4…`/`cali6…` IP sets of a node: Tessera, or another
 * Calico dataplane (Felix). Both use the same names, so without a mark an agent starting next to
 * Felix would rewrite Felix's chains and destroy its sets, and `tessera cleanup` would remove
 * them.
 *
 * The mark is an empty chain, `cali-tessera-owner` (`OWNER_MARKER_CHAIN`), in the filter table:
 * - the driver keeps it among its static chains, so a table's first write carries it in the
 *   same `iptables-restore` transaction as the chains themselves (a crash leaves neither or
 *   both) unless it is there already, and a read-back repairs it like any owned chain;
 * - before the agent writes anything, `claimOwnership` writes it alone into the chosen backend's
 *   IPv4 filter table: IP sets are written before iptables, so this is what makes "our IP sets
 *   never exist without our mark" hold across a crash between the first `ipset restore` and the
 *   first `iptables-restore`;
 * - `tessera cleanup` removes it last, after the IP sets.
 * A chain, not a rule comment: it needs no kernel hook, shows in `iptables-save | grep cali-`,
 * and its presence is one line of `iptables-save`.
 *
 * The judgement (`judgeOwnership`) over every table of both backends and both families:
 * - a table other than filter, raw and mangle (nat) holding `cali-` chains is foreign: Tessera
 *   never writes it, while Felix always programs its nat chains (`cali-nat-outgoing`, …);
 * - a raw or mangle table holding a `cali-` chain Tessera never writes there (Felix's
 *   `cali-wireguard-incoming-mark`, `cali-egress-dscp`, …; Tessera's are
 *   {@link isTesseraChainIn}: the static, host endpoint and policy chains) is foreign;
 * - a filter table holding `cali-` chains or `cali:`-hashed hook rules without the mark is
 *   foreign; so is a raw or mangle table holding either while its backend's filter tables hold
 *   no mark (the driver writes raw and mangle only after filter, so ours never exist without
 *   the mark);
 * - owned-named IP sets while no table anywhere holds the mark are foreign;
 * - otherwise the state is ours (some mark present) or there is none.
 * A Felix started after Tessera on the same node is caught by its nat chains.
 */
import type { Chain } from '../chain.ts';
import {
  CHAIN_FAILSAFE_IN,
  CHAIN_FAILSAFE_OUT,
  CHAIN_FROM_HOST_ENDPOINT,
  CHAIN_MANGLE_POSTROUTING,
  CHAIN_MANGLE_PREROUTING,
  CHAIN_RAW_OUTPUT,
  CHAIN_RAW_PREROUTING,
  CHAIN_RPF_SKIP,
  CHAIN_TO_HOST_ENDPOINT,
} from '../chain-names.ts';
import type { CommandRunner } from '../command-runner.ts';
import { describeTable, readCaliState, type CaliState } from './cali-state.ts';
import { iptablesCommand } from './iptables-backend.ts';
import type { IptablesBackend } from './iptables-table.ts';

/** Tessera's ownership mark (`MAX_CHAIN_NAME_LENGTH` 28: it is 18). */
export const OWNER_MARKER_CHAIN = 'cali-tessera-owner';

/** The mark as a desired chain: empty, always programmed. */
export function ownerMarkerChain(): Chain {
  return { name: OWNER_MARKER_CHAIN, rules: [] };
}

/** The static chains Tessera writes into the raw and mangle tables (static-chains.ts). */
const STATIC_CHAINS: Readonly<Record<'raw' | 'mangle', readonly string[]>> = {
  raw: [CHAIN_RAW_PREROUTING, CHAIN_RPF_SKIP, CHAIN_RAW_OUTPUT, CHAIN_FAILSAFE_IN, CHAIN_FAILSAFE_OUT],
  mangle: [CHAIN_MANGLE_PREROUTING, CHAIN_MANGLE_POSTROUTING, CHAIN_FAILSAFE_IN, CHAIN_FAILSAFE_OUT],
};
/**
 * Prefixes of the chains Tessera writes there on demand: host dispatch (and its child chains),
 * host endpoint and policy chains; profile chains in mangle only.
 */
const DYNAMIC_PREFIXES: Readonly<Record<'raw' | 'mangle', readonly string[]>> = {
  raw: [CHAIN_FROM_HOST_ENDPOINT, CHAIN_TO_HOST_ENDPOINT, 'cali-th-', 'cali-fh-', 'cali-pi-', 'cali-po-'],
  mangle: [CHAIN_FROM_HOST_ENDPOINT, CHAIN_TO_HOST_ENDPOINT, 'cali-th-', 'cali-fh-', 'cali-pi-', 'cali-po-', 'cali-pri-', 'cali-pro-'],
};

/** Whether Tessera writes a chain named `name` into the raw or mangle table. */
export function isTesseraChainIn(table: 'raw' | 'mangle', name: string): boolean {
  return STATIC_CHAINS[table].includes(name) || DYNAMIC_PREFIXES[table].some((p) => name.startsWith(p));
}

export type OwnershipVerdict = 'none' | 'ours' | 'foreign';

export interface Ownership {
  readonly verdict: OwnershipVerdict;
  /** Why the state is foreign, one sentence per table (empty unless `foreign`). */
  readonly reasons: readonly string[];
  /** Backends holding our mark. */
  readonly markedBackends: readonly IptablesBackend[];
}

const MAX_NAMES = 5;

function someNames(names: readonly string[]): string {
  const shown = names.slice(0, MAX_NAMES).join(', ');
  return names.length > MAX_NAMES ? `${shown}, … (${names.length} in all)` : shown;
}

export function judgeOwnership(state: CaliState): Ownership {
  const reasons: string[] = [];
  const marked = new Set<IptablesBackend>();
  for (const t of state.tables) if (t.table === 'filter' && t.chains.includes(OWNER_MARKER_CHAIN)) marked.add(t.backend);
  for (const t of state.tables) {
    if (t.table === 'raw' || t.table === 'mangle') {
      const kind = t.table;
      const alien = t.chains.filter((c) => !isTesseraChainIn(kind, c));
      if (alien.length > 0) reasons.push(`${describeTable(t)} holds cali- chains Tessera never writes there (${someNames(alien)})`);
      else if (marked.has(t.backend)) continue;
      else if (t.chains.length > 0) reasons.push(`${describeTable(t)} holds cali- chains (${someNames(t.chains)}) while no filter table of iptables-${t.backend} holds Tessera's marker chain ${OWNER_MARKER_CHAIN}`);
      else if (t.hookRules.length > 0) reasons.push(`${describeTable(t)} holds cali: hook rules (${someNames(t.hookRules)}) while no filter table of iptables-${t.backend} holds Tessera's marker chain ${OWNER_MARKER_CHAIN}`);
      continue;
    }
    if (t.table !== 'filter') {
      if (t.chains.length > 0) reasons.push(`${describeTable(t)} holds cali- chains Tessera never writes (${someNames(t.chains)})`);
      continue;
    }
    if (t.chains.includes(OWNER_MARKER_CHAIN)) continue;
    if (t.chains.length > 0) reasons.push(`${describeTable(t)} holds cali- chains (${someNames(t.chains)}) without Tessera's marker chain ${OWNER_MARKER_CHAIN}`);
    else if (t.hookRules.length > 0) reasons.push(`${describeTable(t)} holds cali: hook rules (${someNames(t.hookRules)}) without Tessera's marker chain ${OWNER_MARKER_CHAIN}`);
  }
  if (state.ipsets.length > 0 && marked.size === 0) {
    reasons.push(`IP sets ${someNames(state.ipsets)} exist but no iptables table holds Tessera's marker chain ${OWNER_MARKER_CHAIN}`);
  }
  const verdict: OwnershipVerdict = reasons.length > 0 ? 'foreign' : marked.size > 0 ? 'ours' : 'none';
  return { verdict, reasons, markedBackends: [...marked] };
}

export class OwnershipClaimError extends Error {
  override readonly name = 'OwnershipClaimError';
}

/**
 * Writes the mark into `backend`'s IPv4 filter table (idempotent: declaring an existing chain
 * with `--noflush` only flushes it, and the mark is empty).
 */
export async function claimOwnership(runner: CommandRunner, backend: IptablesBackend): Promise<void> {
  const cmd = iptablesCommand(backend, 4, 'restore');
  const r = await runner.run(cmd, ['--noflush', '--wait', '10', '--wait-interval', '50000'], { stdin: `*filter\n:${OWNER_MARKER_CHAIN} - [0:0]\nCOMMIT\n` });
  if (r.code !== 0) throw new OwnershipClaimError(`${cmd}: writing the marker chain ${OWNER_MARKER_CHAIN} failed (exit ${r.code}): ${r.stderr.trim()}`);
}

export type NodeClaim =
  | { readonly claimed: true; readonly previous: 'none' | 'ours'; readonly state: CaliState; readonly ownership: Ownership }
  | { readonly claimed: false; readonly state: CaliState; readonly ownership: Ownership };

/**
 * The agent's start-up check: reads the node's state, and claims it for `backend` unless it
 * is foreign. Throws `CaliStateReadError` / `OwnershipClaimError` when it cannot read or write.
 */
export async function claimNode(runner: CommandRunner, backend: IptablesBackend): Promise<NodeClaim> {
  const state = await readCaliState(runner);
  const ownership = judgeOwnership(state);
  if (ownership.verdict === 'foreign') return { claimed: false, state, ownership };
  await claimOwnership(runner, backend);
  return { claimed: true, previous: ownership.verdict, state, ownership };
}
