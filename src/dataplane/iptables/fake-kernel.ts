/**
 * For unit tests: a `CommandHandler` that behaves like `iptables-restore --noflush`,
 * `iptables-save [-t <table>]`, `ipset restore|list -o save|destroy` and `ip route show exact`
 * against an in-memory model (the filter, raw and mangle tables; one model for both families), strictly enough to catch wrong indices, deleting a referenced chain,
 * duplicate creates and missing sets. Rules are kept as the text written (no reordering).
 * Failures are injectable: transient lock failures, outages (every restore fails), and rules
 * rejected in each of the ways iptables-restore reports it.
 */
import type { CommandHandler, CommandResult, RecordedCommand } from '../command-runner.ts';

const ok = (stdout = ''): CommandResult => ({ code: 0, stdout, stderr: '' });
const fail = (stderr: string): CommandResult => ({ code: 1, stdout: '', stderr });

/** The kernel's own chains of each table the model holds. */
const BUILTIN: Readonly<Record<string, readonly string[]>> = { filter: ['INPUT', 'FORWARD', 'OUTPUT'], raw: ['PREROUTING', 'OUTPUT'], mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'] };

export class FakeKernel {
  /** table → chain → rule bodies (text after `-A <chain> `). */
  tables = new Map<string, Map<string, string[]>>(Object.entries(BUILTIN).map(([t, cs]) => [t, new Map(cs.map((c) => [c, []]))]));

  /** The filter table's chains → rule bodies (text after `-A <chain> `). */
  get chains(): Map<string, string[]> {
    return this.tables.get('filter')!;
  }

  set chains(chains: Map<string, string[]>) {
    this.tables.set('filter', chains);
  }

  /** The raw table's chains → rule bodies. */
  get raw(): Map<string, string[]> {
    return this.tables.get('raw')!;
  }
  sets = new Map<string, { header: string; members: Set<string> }>();
  routes = new Map<string, string>();
  /** Makes the next N restores fail as a held xtables lock does (no line named). */
  failRestores = 0;
  /** Every restore fails, an empty one too (iptables-restore broken or missing). */
  restoreOutage = false;
  /** Every `ipset restore` fails. */
  ipsetOutage = false;
  /**
   * A rule (`-A`/`-I`/`-R` line) matching this is rejected, as iptables-restore rejects a rule
   * it cannot parse or the kernel refuses: `line` names its input line (`Error occurred at
   * line: N`), `commit` names the `COMMIT` line, as legacy iptables does for a table the kernel
   * refuses whole.
   */
  rejectRules: RegExp | undefined = undefined;
  rejectStyle: 'line' | 'commit' = 'line';
  /** Restore transactions received, in order (every attempt, failed or not). */
  readonly restores: string[] = [];

  readonly handler: CommandHandler = (call) => this.handle(call);

  private handle(call: RecordedCommand): CommandResult {
    const { cmd, args, stdin } = call;
    if (/^ip6?tables-(nft|legacy)-save$/.test(cmd)) {
      const t = args.indexOf('-t');
      return ok(t < 0 ? [...this.tables.keys()].map((name) => this.save(name)).join('') : this.save(args[t + 1]!));
    }
    if (/^ip6?tables-(nft|legacy)-restore$/.test(cmd)) {
      if (!args.includes('--noflush')) return fail('expected --noflush');
      this.restores.push(stdin ?? '');
      if (this.restoreOutage) return fail(`${cmd}: exit status 1 (outage)`);
      if (this.failRestores > 0) {
        this.failRestores--;
        return { code: 4, stdout: '', stderr: 'Another app is currently holding the xtables lock. Stopped waiting after 10s.' };
      }
      return this.restore(stdin ?? '');
    }
    if (cmd === 'ipset' && args[0] === 'list') return ok(this.ipsetSave());
    if (cmd === 'ipset' && args[0] === 'restore') return this.ipsetOutage ? fail('ipset v7.17: Kernel error received: Operation not permitted') : this.ipsetRestore(stdin ?? '');
    if (cmd === 'ip' && args.includes('route')) {
      const dst = args[args.length - 1]!;
      const dev = this.routes.get(dst);
      return ok(JSON.stringify(dev === undefined ? [] : [{ dst: dst.split('/')[0], dev, scope: 'link' }]));
    }
    return fail(`fake kernel: unexpected command ${cmd} ${args.join(' ')}`);
  }

  /** `iptables-save -t <table>` of one table. */
  save(table = 'filter'): string {
    const chains = this.tables.get(table) ?? new Map<string, string[]>();
    const out = [`*${table}`];
    for (const c of chains.keys()) out.push(BUILTIN[table]?.includes(c) === true ? `:${c} ACCEPT [0:0]` : `:${c} - [0:0]`);
    for (const [c, rules] of chains) for (const r of rules) out.push(`-A ${c} ${r}`);
    out.push('COMMIT', '');
    return out.join('\n');
  }

  private restore(input: string): CommandResult {
    const lines = input.split('\n').filter((l) => l !== '');
    const table = lines[0]?.slice(1) ?? '';
    const current = this.tables.get(table);
    if (!lines[0]?.startsWith('*') || current === undefined || lines[lines.length - 1] !== 'COMMIT') return fail('bad transaction framing');
    const next = new Map([...current].map(([k, v]) => [k, [...v]]));
    for (const [n, line] of lines.slice(1, -1).entries()) {
      const err = (m: string) => fail(`line ${n + 2}: ${m}: ${line}`);
      if (line.startsWith(':')) {
        next.set(line.slice(1).split(' ')[0]!, []);
        continue;
      }
      const m = /^-([AIRDX]) (\S+)(?: (.*))?$/.exec(line);
      if (m === null) return err('unparseable');
      const [, op, chain, rest = ''] = m;
      if (this.rejectRules !== undefined && 'AIR'.includes(op!) && this.rejectRules.test(rest)) return this.rejection(n + 2, lines.length);
      const rules = next.get(chain!);
      if (rules === undefined) return err('no such chain');
      const target = /-[jg] (\S+)/.exec(rest)?.[1];
      if (target !== undefined && target.startsWith('cali-') && !next.has(target)) return err(`jump to missing chain ${target}`);
      const idx = /^(\d+) (.*)$/.exec(rest);
      switch (op) {
        case 'A':
          rules.push(rest);
          break;
        case 'I':
          if (idx === null || Number(idx[1]) > rules.length + 1) return err('bad insert index');
          rules.splice(Number(idx[1]) - 1, 0, idx[2]!);
          break;
        case 'R':
          if (idx === null || Number(idx[1]) > rules.length) return err('bad replace index');
          rules[Number(idx[1]) - 1] = idx[2]!;
          break;
        case 'D': {
          if (/^\d+$/.test(rest)) {
            if (Number(rest) > rules.length) return err('bad delete index');
            rules.splice(Number(rest) - 1, 1);
          } else {
            const i = rules.indexOf(rest);
            if (i < 0) return err('rule to delete not found');
            rules.splice(i, 1);
          }
          break;
        }
        case 'X': {
          if (rules.length > 0) return err('chain not empty');
          for (const [c, rs] of next) if (c !== chain && rs.some((r) => new RegExp(`-[jg] ${chain}( |$)`).test(r))) return err(`chain referenced from ${c}`);
          next.delete(chain!);
          break;
        }
      }
    }
    this.tables.set(table, next);
    return ok();
  }

  private rejection(line: number, commitLine: number): CommandResult {
    switch (this.rejectStyle) {
      case 'line':
        return { code: 2, stdout: '', stderr: `iptables-restore v1.8.9 (nf_tables): Parser cannot handle more arguments\nError occurred at line: ${line}\nTry \`iptables-restore -h' or 'iptables-restore --help' for more information.\n` };
      case 'commit':
        return fail(`iptables-restore: line ${commitLine} failed`);
    }
  }

  ipsetSave(): string {
    const out: string[] = [];
    for (const [n, s] of this.sets) {
      out.push(`create ${n} ${s.header} hashsize 1024 bucketsize 12 initval 0x1234`);
      for (const m of s.members) out.push(`add ${n} ${m}`);
    }
    return out.join('\n') + '\n';
  }

  private ipsetRestore(input: string): CommandResult {
    for (const line of input.split('\n')) {
      if (line === '' || line === 'COMMIT') continue;
      const [op, name, ...rest] = line.split(' ');
      const set = this.sets.get(name!);
      switch (op) {
        case 'create':
          if (set !== undefined) return fail(`set ${name} exists`);
          this.sets.set(name!, { header: rest.join(' '), members: new Set() });
          break;
        case 'add':
          if (set === undefined) return fail(`no set ${name}`);
          set.members.add(rest[0]!.replace(/\/32$/, ''));
          break;
        case 'del':
          if (set === undefined) return fail(`no set ${name}`);
          set.members.delete(rest[0]!);
          break;
        case 'swap': {
          const other = this.sets.get(rest[0]!);
          if (set === undefined || other === undefined) return fail('swap of missing set');
          this.sets.set(name!, other);
          this.sets.set(rest[0]!, set);
          break;
        }
        case 'destroy': {
          if (set === undefined) return fail(`no set ${name}`);
          for (const chains of this.tables.values()) for (const rs of chains.values()) if (rs.some((r) => r.includes(`--match-set ${name} `))) return fail(`Set ${name} is in use`);
          this.sets.delete(name!);
          break;
        }
        default:
          return fail(`unknown ipset command ${op}`);
      }
    }
    return ok();
  }
}
