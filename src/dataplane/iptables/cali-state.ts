/**
 * What a node holds of Calico-style dataplane state, whoever wrote it: `cali-` chains and the
 * rules that hook them into kernel chains, in every table of every iptables backend and family,
 * and the IP sets named like ours. The ownership check (`ownership.ts`) judges it and
 * `tessera cleanup` (`cleanup.ts`) removes it; neither ever needs more than this.
 *
 * Read-only: iptables-save is run without `-t` (a legacy `-t <table>` would create the table)
 * and IP sets are listed by name. A backend or family whose save fails (binary missing, IPv6
 * disabled, module not loaded) is reported in `unreadable` and holds nothing we could change.
 */
import { CHAIN_PREFIX } from '../chain-names.ts';
import { RULE_HASH_PREFIX } from './rule-text.ts';
import type { CommandRunner } from '../command-runner.ts';
import { IPTABLES_BACKENDS, iptablesCommand } from './iptables-backend.ts';
import type { IptablesBackend } from './iptables-table.ts';

/** One table of one backend and family, as far as `cali-` state goes. */
export interface CaliTableState {
  readonly backend: IptablesBackend;
  readonly ipVersion: 4 | 6;
  readonly table: string;
  /** `cali-` chains declared in the table, in save order. */
  readonly chains: readonly string[];
  /** Rules of non-`cali-` chains carrying a `cali:` hash comment, exactly as saved (`-A FORWARD …`). */
  readonly hookRules: readonly string[];
  /**
   * Rules of non-`cali-` chains WITHOUT a `cali:` hash that jump or go to a `cali-` chain: not
   * written by Tessera or Felix, yet they keep those chains from being deleted.
   */
  readonly foreignReferences: readonly string[];
}

export interface CaliState {
  /** Only tables holding some `cali-` state. */
  readonly tables: readonly CaliTableState[];
  /** IP sets whose names Tessera's `IpSets` treats as its own (see `isOwnedIpSetName`). */
  readonly ipsets: readonly string[];
  /** `<command>: <why>` for each save that failed. */
  readonly unreadable: readonly string[];
}

export class CaliStateReadError extends Error {
  override readonly name = 'CaliStateReadError';
}

/**
 * IP set names `IpSets` reads, changes and destroys as its own (ipsets.ts `ownedPrefixes`):
 * Felix's `cali4…`/`cali6…` and its older `felix-4…`/`felix-6…`.
 */
const OWNED_IPSET_NAME = /^(cali[46]|felix-[46])/;

export function isOwnedIpSetName(name: string): boolean {
  return OWNED_IPSET_NAME.test(name);
}

const HASH_COMMENT = new RegExp(`--comment "?${RULE_HASH_PREFIX}[A-Za-z0-9_-]+"?`);
const JUMP_TO_OWNED = new RegExp(` -[jg] ${CHAIN_PREFIX}\\S+`);

/** The `cali-` state in one backend and family's `iptables-save` output (all tables). */
export function parseCaliTables(save: string, backend: IptablesBackend, ipVersion: 4 | 6): CaliTableState[] {
  const out: CaliTableState[] = [];
  let current: { table: string; chains: string[]; hookRules: string[]; foreignReferences: string[] } | undefined;
  const close = (): void => {
    if (current !== undefined && current.chains.length + current.hookRules.length + current.foreignReferences.length > 0) {
      out.push({ backend, ipVersion, ...current });
    }
    current = undefined;
  };
  for (const raw of save.split('\n')) {
    const line = raw.trimEnd();
    if (line.startsWith('*')) {
      close();
      current = { table: line.slice(1), chains: [], hookRules: [], foreignReferences: [] };
      continue;
    }
    if (current === undefined) continue;
    if (line === 'COMMIT') {
      close();
      continue;
    }
    if (line.startsWith(':')) {
      const name = line.slice(1).split(' ')[0]!;
      if (name.startsWith(CHAIN_PREFIX)) current.chains.push(name);
      continue;
    }
    if (!line.startsWith('-A ')) continue;
    const chain = line.slice(3).split(' ')[0]!;
    if (chain.startsWith(CHAIN_PREFIX)) continue;
    if (HASH_COMMENT.test(line)) current.hookRules.push(line);
    else if (JUMP_TO_OWNED.test(line)) current.foreignReferences.push(line);
  }
  close();
  return out;
}

/** The names `ipset list -n` printed that `isOwnedIpSetName` accepts. */
export function parseOwnedIpSets(names: string): string[] {
  return names
    .split('\n')
    .map((l) => l.trim())
    .filter((n) => n !== '' && isOwnedIpSetName(n));
}

export interface ReadCaliStateOptions {
  /** @default both */
  readonly backends?: readonly IptablesBackend[];
  /** @default [4, 6] */
  readonly ipVersions?: ReadonlyArray<4 | 6>;
}

/**
 * Reads the node's `cali-` state. Throws `CaliStateReadError` only when the IP sets cannot be
 * listed (then nothing can be judged); failed iptables reads land in `unreadable`.
 */
export async function readCaliState(runner: CommandRunner, opts: ReadCaliStateOptions = {}): Promise<CaliState> {
  const { backends = IPTABLES_BACKENDS, ipVersions = [4, 6] } = opts;
  const tables: CaliTableState[] = [];
  const unreadable: string[] = [];
  for (const backend of backends) {
    for (const ipVersion of ipVersions) {
      const cmd = iptablesCommand(backend, ipVersion, 'save');
      const r = await runner.run(cmd, [], { timeoutMs: 60_000 });
      if (r.code !== 0) {
        unreadable.push(`${cmd}: ${firstLine(r.stderr) || `exit ${r.code}`}`);
        continue;
      }
      tables.push(...parseCaliTables(r.stdout, backend, ipVersion));
    }
  }
  const sets = await runner.run('ipset', ['list', '-n'], { timeoutMs: 60_000 });
  if (sets.code !== 0) throw new CaliStateReadError(`ipset list -n failed (exit ${sets.code}): ${firstLine(sets.stderr)}`);
  return { tables, ipsets: parseOwnedIpSets(sets.stdout), unreadable };
}

/** `iptables-nft (IPv4) filter`: how messages name a table. */
export function describeTable(t: Pick<CaliTableState, 'backend' | 'ipVersion' | 'table'>): string {
  return `${t.ipVersion === 4 ? 'iptables' : 'ip6tables'}-${t.backend} ${t.table}`;
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
