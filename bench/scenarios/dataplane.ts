/**
 * Dataplane programming cost against raw iptables-restore / ipset, each case in a fresh
 * network namespace (root; iptables-nft, the driver's default backend):
 *
 * - `program-<N>`: N iptables rules from scratch (N/100 policies × 100 rules matching a source
 *   /32 and a TCP port, 10 endpoints sharing them). `oursMs` = `send()` of the whole state +
 *   `InSync` → `flushed()` (message handling, render, hash, ipset and iptables-save read-backs,
 *   restore); `applyMs` = the driver's apply alone (what `felix_int_dataplane_apply_time_seconds`
 *   observes: build the transaction, restore), with `ratio` / `applyRatio` for each;
 *   `rawMs` = `iptables-nft-restore --noflush` of the exact transaction we wrote, into another
 *   fresh namespace. Target `ratio` ≤ 1.2. `phases`: the median of each of the driver's phases
 *   (`ApplyPhases`: drain and policy render, endpoint render, iptables-save read-backs, IP sets,
 *   the restore, and the input generation and hashing that overlap it); `otherMs` is what
 *   `oursMs` holds beyond the drain and the apply (the loop's scheduling, `flushed()`).
 * - `delta-one-policy-<N>`: with N rules loaded, one policy's last rule changes (5 times per
 *   run, median). `oursMs` = send → flushed; `rawMs` = `--noflush` restore of the same delta
 *   into a namespace holding the same N rules. Target `ratio` ≤ 1.5. `bytes` = the delta transaction's size. The
 *   post-write read-back (`iptables-save`, scheduled on its own timer) is pushed out of the
 *   measured window; at 100k rules it costs ~2 s whenever it runs.
 * - `ipset-churn`: a 10k-member set; batches of 2,500 adds + 2,500 removes through the driver;
 *   member changes per second.
 *
 * Every case runs 3 times (`npm run bench -- dataplane [runs] [sizes…]`); min/median/max reported
 * (ratios per run, ours over the raw restore that followed it).
 */
import { performance } from 'node:perf_hooks';
import { report, type BenchScenario } from '../scenario.ts';
import type { DataplaneMessage, PolicyId } from '../../src/proto/index.ts';
import { DataplaneDriver, NetnsCommandRunner, RealCommandRunner, stdinText, type ApplyPhases, type CommandResult, type CommandRunner, type RunOptions } from '../../src/dataplane/index.ts';
import { allowAllProfile, endpoint, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';
import { createNetns } from '../../e2e/dataplane/netns.ts';

/** Records what each command was fed, so the raw baseline replays exactly our input. */
class TapRunner implements CommandRunner {
  readonly restores: string[] = [];
  constructor(private readonly inner: CommandRunner) {}
  async run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<CommandResult> {
    const stdin = opts?.stdin;
    if (!(cmd.includes('iptables') && cmd.endsWith('-restore')) || stdin === undefined) return this.inner.run(cmd, args, opts);
    // Tee the (possibly streamed) input without changing how it is fed.
    const chunks: Array<string | Uint8Array> = [];
    const tee = function* (): Generator<string | Uint8Array> {
      if (typeof stdin === 'string') yield stdin;
      else for (const c of stdin) yield c;
    };
    const recording = (function* () {
      for (const c of tee()) {
        chunks.push(c);
        yield c;
      }
    })();
    const r = await this.inner.run(cmd, args, { ...opts, stdin: typeof stdin === 'string' ? stdin : recording });
    this.restores.push(typeof stdin === 'string' ? stdin : stdinText(chunks)!);
    return r;
  }
}

const RULES_PER_POLICY = 100;
const DELTA_REPEATS = 5;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ENDPOINTS = 10;

function policyId(i: number): PolicyId {
  return { tier: 'default', name: `p${i}`, namespace: 'bench', kind: 'NetworkPolicy' };
}

function policyMsg(i: number, variant = 0): DataplaneMessage {
  const rules = Array.from({ length: RULES_PER_POLICY }, (_, r) =>
    rule({ action: 'deny', protocol: 'tcp', srcNets: [`10.${(i >> 8) & 255}.${i & 255}.${r}/32`], dstPorts: [port(1000 + r + (r === RULES_PER_POLICY - 1 ? variant : 0))] }),
  );
  return { type: 'ActivePolicyUpdate', id: policyId(i), policy: policy(rules) };
}

function stateFor(rules: number): DataplaneMessage[] {
  const policies = Math.max(1, Math.round(rules / RULES_PER_POLICY));
  const msgs: DataplaneMessage[] = [allowAllProfile('kns.bench')];
  for (let i = 0; i < policies; i++) msgs.push(policyMsg(i));
  const perEp = Math.ceil(policies / ENDPOINTS);
  for (let e = 0; e < ENDPOINTS; e++) {
    const ids = Array.from({ length: perEp }, (_, k) => e * perEp + k).filter((k) => k < policies).map(policyId);
    msgs.push({
      type: 'WorkloadEndpointUpdate',
      id: { namespace: 'bench', name: `ep${e}` },
      endpoint: endpoint({ interfaceName: `calibench${e}`, ipv4Nets: [`10.66.0.${e + 1}/32`], profileIds: ['kns.bench'], tiers: [tier('default', ids)] }),
    });
  }
  return msgs;
}

async function rawRestore(ns: string, input: string): Promise<number> {
  const runner = new NetnsCommandRunner(ns, new RealCommandRunner());
  const t0 = performance.now();
  const r = await runner.run('iptables-nft-restore', ['--noflush', '--wait', '10', '--wait-interval', '50000'], { stdin: input, timeoutMs: 600_000 });
  const ms = performance.now() - t0;
  if (r.code !== 0) throw new Error(`raw iptables-restore failed: ${r.stderr}`);
  return ms;
}

interface ProgramRun {
  oursMs: number;
  applyMs: number;
  rawMs: number;
  deltaOursMs: number;
  deltaApplyMs: number;
  deltaRawMs: number;
  deltaBytes: number;
  rulesLoaded: number;
  phases: ApplyPhases;
}

async function programOnce(rules: number): Promise<ProgramRun> {
  const ours = createNetns('tsr-bench');
  const raw = createNetns('tsr-bench');
  const stop = new AbortController();
  try {
    const tap = new TapRunner(new NetnsCommandRunner(ours.name));
    const driver = new DataplaneDriver({ runner: tap, iptablesPostWriteCheckMs: 3_600_000, iptablesRefreshIntervalMs: 3_600_000, ipsetsRefreshIntervalMs: 3_600_000 });
    const running = driver.run(stop.signal);
    const state = stateFor(rules);
    // The input was just allocated: collect now, so the timed window does not pay for
    // promoting the benchmark's own objects (an agent's state arrives over time and is old).
    (globalThis as { gc?: () => void }).gc?.();
    const t0 = performance.now();
    driver.send([...state, { type: 'InSync' }]);
    await driver.flushed();
    const oursMs = performance.now() - t0;
    const applyMs = driver.lastApply!.ms;
    const phases = driver.lastApply!.phases;
    const rulesLoaded = (await driver.metrics.rules.get()).values[0]?.value ?? 0;
    const full = tap.restores[0]!;
    const rawMs = await rawRestore(raw.name, full);

    // (b) one policy changes (its last rule's port), 5 times; each delta is replayed raw into
    // the twin namespace, which holds the same rules. Medians, so one scheduling hiccup on a
    // shared machine does not decide the figure.
    const changed = Math.floor(Math.max(1, Math.round(rules / RULES_PER_POLICY)) / 2);
    const ours5: number[] = [];
    const apply5: number[] = [];
    const raw5: number[] = [];
    let delta = '';
    for (let k = 1; k <= DELTA_REPEATS; k++) {
      const t1 = performance.now();
      driver.send(policyMsg(changed, k));
      await driver.flushed();
      ours5.push(performance.now() - t1);
      apply5.push(driver.lastApply!.ms);
      delta = tap.restores[tap.restores.length - 1]!;
      raw5.push(await rawRestore(raw.name, delta));
    }
    const deltaOursMs = median(ours5);
    const deltaApplyMs = median(apply5);
    const deltaRawMs = median(raw5);
    stop.abort();
    await running;
    return { oursMs, applyMs, rawMs, deltaOursMs, deltaApplyMs, deltaRawMs, deltaBytes: Buffer.byteLength(delta), rulesLoaded, phases };
  } finally {
    stop.abort();
    ours.destroy();
    raw.destroy();
  }
}

async function churnOnce(): Promise<{ changesPerSecond: number; changes: number; ms: number }> {
  const ns = createNetns('tsr-bench');
  const stop = new AbortController();
  try {
    const driver = new DataplaneDriver({ runner: new NetnsCommandRunner(ns.name), ipsetsRefreshIntervalMs: 3_600_000 });
    const running = driver.run(stop.signal);
    const member = (i: number) => `10.${100 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}/32`;
    const SIZE = 10_000;
    const BATCH = 2_500;
    driver.send([{ type: 'IPSetUpdate', id: 's:bench', ipsetType: 'hash:net', members: Array.from({ length: SIZE }, (_, i) => member(i)) }, { type: 'InSync' }]);
    await driver.flushed();
    let next = SIZE;
    let oldest = 0;
    let changes = 0;
    const t0 = performance.now();
    for (let b = 0; b < 8; b++) {
      const added = Array.from({ length: BATCH }, () => member(next++));
      const removed = Array.from({ length: BATCH }, () => member(oldest++));
      driver.send({ type: 'IPSetDeltaUpdate', id: 's:bench', added, removed });
      await driver.flushed();
      changes += 2 * BATCH;
    }
    const ms = performance.now() - t0;
    stop.abort();
    await running;
    return { changesPerSecond: Math.round((changes * 1000) / ms), changes, ms: Math.round(ms) };
  } finally {
    stop.abort();
    ns.destroy();
  }
}

const round = (n: number, d = 3) => Math.round(n * 10 ** d) / 10 ** d;

/** The median of each phase over the runs, and of what `oursMs` holds beyond the drain and the apply. */
function phaseMedians(results: readonly ProgramRun[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(results[0]!.phases) as Array<keyof ApplyPhases>) out[k] = round(median(results.map((x) => x.phases[k])), 1);
  out.otherMs = round(median(results.map((x) => x.oursMs - x.applyMs - x.phases.drainMs)), 1);
  return out;
}
const minMax = (xs: number[], d = 3) => ({ min: round(Math.min(...xs), d), median: round(median(xs), d), max: round(Math.max(...xs), d) });

const scenario: BenchScenario = {
  description: 'iptables/ipset programming time vs raw iptables-restore, in fresh network namespaces (root)',
  includeInDefaultRun: false,
  async run(args) {
    const runs = args[0] === undefined ? 3 : Number(args[0]);
    const sizes = args.length > 1 ? args.slice(1).map(Number) : [10_000, 100_000];
    // Warm-up (not reported): JIT-compiles the renderer, hashing and restore paths once, as in
    // an agent that has been running; a cold first render of 10k rules costs ~100–200 ms more.
    await programOnce(10_000);
    for (const size of sizes) {
      const results: ProgramRun[] = [];
      for (let r = 0; r < runs; r++) results.push(await programOnce(size));
      report('dataplane', `program-${size}`, {
        backend: 'nft',
        runs,
        rulesLoaded: results[0]!.rulesLoaded,
        oursMs: minMax(results.map((x) => x.oursMs), 1),
        applyMs: minMax(results.map((x) => x.applyMs), 1),
        rawMs: minMax(results.map((x) => x.rawMs), 1),
        ratio: minMax(results.map((x) => x.oursMs / x.rawMs)),
        applyRatio: minMax(results.map((x) => x.applyMs / x.rawMs)),
        target: 1.2,
        phases: phaseMedians(results),
      });
      report('dataplane', `delta-one-policy-${size}`, {
        backend: 'nft',
        runs,
        oursMs: minMax(results.map((x) => x.deltaOursMs), 1),
        applyMs: minMax(results.map((x) => x.deltaApplyMs), 1),
        rawMs: minMax(results.map((x) => x.deltaRawMs), 1),
        ratio: minMax(results.map((x) => x.deltaOursMs / x.deltaRawMs)),
        applyRatio: minMax(results.map((x) => x.deltaApplyMs / x.deltaRawMs)),
        bytes: minMax(results.map((x) => x.deltaBytes), 0),
        target: 1.5,
      });
    }
    const churn: Array<{ changesPerSecond: number; changes: number; ms: number }> = [];
    for (let r = 0; r < runs; r++) churn.push(await churnOnce());
    report('dataplane', 'ipset-churn', {
      runs,
      setSize: 10_000,
      batch: '2500 adds + 2500 removes',
      changesPerSecond: minMax(churn.map((c) => c.changesPerSecond), 0),
    });
  },
};

export default scenario;
