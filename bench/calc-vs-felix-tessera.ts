/**
 * The Tessera side of `npm run bench -- calc-vs-felix`: runs Tessera's CalcGraph on a workload
 * directory bench/scenarios/calc-vs-felix.ts writes and prints the same JSON figures as the Felix
 * side (bench/felix/main.go) — read that file's header for what is timed. Run as its own process
 * (`node --expose-gc --import tsx bench/calc-vs-felix-tessera.ts <dir> [--churn-repeat n]
 * [--mixed-repeat n] [--flush-every n] [--dump prefix] [--heap-snapshot file]`) so its heap and RSS are its own;
 * `--heap-snapshot` writes a V8 heap snapshot after the sync (graph alive, input dropped).
 *
 * Tessera's graph takes v3 objects (conversion and validation included), so its figure is the
 * like-for-like of Felix's `graph+conversion` mode.
 */
import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { writeHeapSnapshot } from 'node:v8';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';

import type { V3Resource } from '../src/api/index.ts';
import { CalcGraph } from '../src/calc/index.ts';
import type { DataplaneMessage, PolicyId } from '../src/proto/index.ts';
import type { Update } from '../src/syncer/index.ts';

const BATCH = 1000;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) throw new Error('run with node --expose-gc');
  g();
  g();
}

function heapMB(): number {
  gc();
  return round(process.memoryUsage().heapUsed / 1048576, 1);
}

function rssMB(): number {
  return round(process.memoryUsage().rss / 1048576, 1);
}

function round(v: number, places: number): number {
  return Number(v.toFixed(places));
}

async function readResources(file: string): Promise<V3Resource[]> {
  const out: V3Resource[] = [];
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) if (line !== '') out.push(JSON.parse(line) as V3Resource);
  return out;
}

/** The canonical dataplane state both benches print (see bench/felix/main.go `state`). */
class State {
  readonly ipSets = new Map<string, Set<string>>();
  readonly ipSetType = new Map<string, string>();
  readonly policies = new Set<string>();
  readonly profiles = new Set<string>();
  readonly endpoints = new Map<string, string>();

  /** `endpointIds`: `<namespace>/<WEP name>` → Felix's `<namespace>/<pod> <endpoint>`. */
  constructor(private readonly endpointIds: ReadonlyMap<string, string>) {}

  apply(msgs: readonly DataplaneMessage[]): void {
    const policyName = (id: PolicyId): string => (id.namespace === undefined ? id.name : `${id.namespace}/${id.name}`);
    for (const m of msgs) {
      switch (m.type) {
        case 'IPSetUpdate':
          this.ipSets.set(m.id, new Set(m.members));
          this.ipSetType.set(m.id, m.ipsetType.replace(/^hash:/, ''));
          break;
        case 'IPSetDeltaUpdate': {
          const set = this.ipSets.get(m.id);
          if (set === undefined) throw new Error(`IPSetDeltaUpdate for unknown set ${m.id}`);
          for (const x of m.removed) set.delete(x);
          for (const x of m.added) set.add(x);
          break;
        }
        case 'IPSetRemove':
          this.ipSets.delete(m.id);
          this.ipSetType.delete(m.id);
          break;
        case 'ActivePolicyUpdate':
          this.policies.add(`${m.id.tier}/${policyName(m.id)}`);
          break;
        case 'ActivePolicyRemove':
          this.policies.delete(`${m.id.tier}/${policyName(m.id)}`);
          break;
        case 'ActiveProfileUpdate':
          this.profiles.add(m.id.name);
          break;
        case 'ActiveProfileRemove':
          this.profiles.delete(m.id.name);
          break;
        case 'WorkloadEndpointUpdate': {
          const tiers = m.endpoint.tiers.map(
            (t) => `${t.name}:in=${t.ingressPolicies.map(policyName).join(',')}:eg=${t.egressPolicies.map(policyName).join(',')}`,
          );
          this.endpoints.set(this.#endpointId(m.id), `tiers=${tiers.join(';')} profiles=${m.endpoint.profileIds.join(',')}`);
          break;
        }
        case 'WorkloadEndpointRemove':
          this.endpoints.delete(this.#endpointId(m.id));
          break;
        default:
          break;
      }
    }
  }

  #endpointId(id: { namespace: string; name: string }): string {
    const key = `${id.namespace}/${id.name}`;
    const felix = this.endpointIds.get(key);
    if (felix === undefined) throw new Error(`endpoint ${key} is not a local endpoint of the workload`);
    return felix;
  }

  digest(): { digest: string; lines: string[] } {
    const lines: string[] = [];
    for (const [id, set] of this.ipSets) lines.push(`ipset ${id} ${this.ipSetType.get(id) ?? ''} ${[...set].sort(cmp).join(',')}`);
    for (const p of this.policies) lines.push(`policy ${p}`);
    for (const p of this.profiles) lines.push(`profile ${p}`);
    for (const [id, ep] of this.endpoints) lines.push(`endpoint ${id} ${ep}`);
    lines.sort(cmp);
    return { digest: createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16), lines };
  }

  counts(): Record<string, number> {
    let members = 0;
    for (const s of this.ipSets.values()) members += s.size;
    return { endpoints: this.endpoints.size, ipSets: this.ipSets.size, members, policies: this.policies.size, profiles: this.profiles.size };
  }
}

/** Byte order, as Go's sort.Strings. */
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function report(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: 'calc-vs-felix', impl: 'tessera', mode: 'graph+conversion', ...fields })}\n`);
}

async function main(): Promise<void> {
  const [dir, ...rest] = process.argv.slice(2);
  if (dir === undefined) throw new Error('usage: calc-vs-felix-tessera.ts <workload dir> [--churn-repeat n] [--mixed-repeat n] [--flush-every n] [--dump prefix] [--heap-snapshot file]');
  const opt = (name: string, dflt: string): string => {
    const i = rest.indexOf(name);
    return i >= 0 ? (rest[i + 1] ?? dflt) : dflt;
  };
  const repeats: Record<string, number> = { remote: Number(opt('--churn-repeat', '100')), mixed: Number(opt('--mixed-repeat', '10')) };
  const flushEvery = Number(opt('--flush-every', '100'));
  const dump = opt('--dump', '');
  const node = opt('--node', 'node-0');
  const snapshot = opt('--heap-snapshot', '');
  const caseName = path.basename(dir);
  const writeDump = async (phase: string, lines: string[]): Promise<void> => {
    if (dump !== '') await writeFile(`${dump}.${phase}.txt`, `${lines.join('\n')}\n`);
  };
  const baseline = heapMB();

  let sync: V3Resource[] = await readResources(path.join(dir, 'sync.ndjson'));
  const endpointIds = new Map<string, string>();
  for (const r of sync) {
    if (r.kind === 'WorkloadEndpoint' && r.spec.node === node) {
      endpointIds.set(`${r.metadata.namespace}/${r.metadata.name}`, `${r.metadata.namespace}/${r.spec.pod} ${r.spec.endpoint}`);
    }
  }
  const graph = new CalcGraph({ nodeName: node });
  gc();

  const start = performance.now();
  graph.onStatusUpdated('resync-in-progress');
  for (let i = 0; i < sync.length; i += BATCH) {
    const batch: Update[] = [];
    for (const resource of sync.slice(i, i + BATCH)) batch.push({ op: 'upsert', resource });
    graph.onUpdates(batch);
  }
  graph.onStatusUpdated('in-sync');
  const out = graph.flush();
  const seconds = (performance.now() - start) / 1000;
  sync = [];

  const state = new State(endpointIds);
  state.apply(out);
  const first = state.digest();
  await writeDump('sync', first.lines);
  report({
    case: caseName,
    phase: 'sync',
    seconds: round(seconds, 3),
    messages: out.length,
    ipSets: out.filter((m) => m.type === 'IPSetUpdate').length,
    policies: out.filter((m) => m.type === 'ActivePolicyUpdate').length,
    stateDigest: first.digest,
    state: state.counts(),
    heapMB: (out.length = 0, heapMB()),
    baselineHeapMB: baseline,
    heapSnapshot: snapshot === '' ? undefined : writeHeapSnapshot(snapshot),
    rssMB: rssMB(),
  });

  for (const churn of ['remote', 'mixed']) {
    const files = [0, 1].map((r) => path.join(dir, `churn-${churn}-${r}.ndjson`));
    if (!files.every((f) => existsSync(f))) continue;
    const rounds = await Promise.all(files.map(async (f) => (await readResources(f)).map((resource): Update => ({ op: 'upsert', resource }))));
    const msgs: DataplaneMessage[] = [];
    let updates = 0;
    const t0 = performance.now();
    for (let rep = 0; rep < (repeats[churn] ?? 0); rep++) {
      for (const updatesOfRound of rounds) {
        for (const u of updatesOfRound) {
          graph.onUpdates([u]);
          if (++updates % flushEvery === 0) for (const m of graph.flush()) msgs.push(m);
        }
      }
    }
    for (const m of graph.flush()) msgs.push(m);
    const churnSeconds = (performance.now() - t0) / 1000;
    let memberChanges = 0;
    for (const m of msgs) if (m.type === 'IPSetDeltaUpdate') memberChanges += m.added.length + m.removed.length;
    state.apply(msgs);
    const after = state.digest();
    await writeDump(`churn-${churn}`, after.lines);
    report({
      case: caseName,
      phase: `churn-${churn}`,
      updatesPerSecond: Math.trunc(updates / churnSeconds),
      updates,
      seconds: round(churnSeconds, 3),
      messages: msgs.length,
      ipSetMemberChanges: memberChanges,
      stateDigest: after.digest,
      state: state.counts(),
      heapMB: (msgs.length = 0, heapMB()),
      rssMB: rssMB(),
    });
  }
}

await main();
