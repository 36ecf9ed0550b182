/**
 * The differential test, verdict engine vs kernel: each round is a scenario (the fixture's
 * namespaces and pods plus generated policies) read the way `tessera simulate --scenarios`
 * reads it (scenario-file → controllers' builders/converter → one calc graph per node →
 * verdict engine), and the same translated resources programmed by the real dataplane driver
 * into network namespaces (kernel-cluster.ts) and probed with real TCP, UDP and ICMP echo
 * traffic over IPv4 and IPv6. A probe whose real outcome differs from the simulator's verdict
 * is a disagreement.
 *
 * A failing round is shrunk (policies, then rules, then single criteria dropped while some
 * disagreement remains) and printed as a scenario file whose probes expect what the kernel did
 * (with the simulator's verdict in the description): it runs as is with `tessera simulate
 * --scenarios` and the e2e runner. Only which side is right is left to a person.
 */
import { translateCluster, Simulation, type SimEndpoint } from '../../src/simulate/index.ts';
import { initialState, stateObjects, type Scenario, type ScenarioProbe } from '../../src/simulate/scenario-file.ts';
import { evaluateDirection, makePacket } from '../../src/simulate/verdict-engine.ts';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { NAMESPACES, PODS, SERVED_PORTS, SERVICE_OBJECTS, podKey } from './fixture.ts';
import { KernelCluster, type KernelProbe } from './kernel-cluster.ts';
import { Draw, PolicyGenerator } from './policy-generator.ts';

export interface Disagreement {
  readonly probe: KernelProbe;
  readonly simulator: boolean;
  readonly kernel: boolean;
}

export interface RoundResult {
  readonly round: number;
  readonly scenario: Scenario;
  readonly probes: number;
  readonly disagreements: readonly Disagreement[];
}

export interface DifferentialOptions {
  /** Probes per round, drawn from every (pair, port or ICMP, family). @default 60 */
  readonly probesPerRound?: number;
  /** Where progress and reproducers go. @default nothing */
  readonly log?: (line: string) => void;
}

/** Every probe the fixture offers: ordered pod pairs × (served ports + ICMP echo) × families. */
export function allProbes(): KernelProbe[] {
  const out: KernelProbe[] = [];
  for (const from of PODS) {
    for (const to of PODS) {
      if (from === to) continue;
      for (const family of [4, 6] as const) {
        for (const { port, protocol } of SERVED_PORTS) out.push({ from: podKey(from), to: podKey(to), kind: protocol, port, family });
        out.push({ from: podKey(from), to: podKey(to), kind: 'ICMP', port: 0, family });
      }
    }
  }
  return out;
}

/**
 * The scenario of one round: the fixture plus `policies`. The fixture's Services and
 * EndpointSlices go first among the scenario's objects (a scenario file carries them there),
 * so the shrinker may drop those a reproducer does not need.
 */
export function roundScenario(name: string, policies: readonly unknown[]): Scenario {
  return {
    name,
    namespaces: NAMESPACES.map((n) => ({ name: n.name, labels: { ...n.labels } })),
    pods: PODS.map((p) => ({ ...p, labels: { ...p.labels }, containerPorts: [...(p.containerPorts ?? [])] })),
    policies: [...structuredClone(SERVICE_OBJECTS), ...policies],
    probes: [],
  };
}

/** The simulator's side: the scenario's translated resources and a verdict per probe. */
export class SimulatorSide {
  readonly sim: Simulation;

  constructor(readonly resources: ReturnType<typeof translateCluster>['resources']) {
    this.sim = new Simulation(resources);
  }

  /** @throws InputError when the scenario holds an invalid object (as `simulate` would). */
  static of(scenario: Scenario): SimulatorSide {
    const notes: string[] = [];
    return new SimulatorSide(translateCluster(stateObjects(initialState(scenario), notes)).resources);
  }

  verdict(p: KernelProbe): boolean {
    const from = this.sim.endpointFor(p.from);
    const to = this.sim.endpointFor(p.to);
    if (from === undefined || to === undefined) throw new Error(`SimulatorSide: no endpoint for ${from === undefined ? p.from : p.to}`);
    const pkt = makePacket(netOf(from, p.family), netOf(to, p.family), p.kind, p.port);
    return evaluateDirection(from.state, from.endpoint, 'egress', pkt).allowed && evaluateDirection(to.state, to.endpoint, 'ingress', pkt).allowed;
  }
}

function netOf(ep: SimEndpoint, family: 4 | 6): string {
  const net = family === 4 ? ep.endpoint.ipv4Nets[0] : ep.endpoint.ipv6Nets[0];
  if (net === undefined) throw new Error(`SimulatorSide: ${ep.id} has no IPv${family} address`);
  return net;
}

/** A round's objects that translate without an InputError (regenerated until they do). */
export function validPolicies(gen: PolicyGenerator): readonly unknown[] {
  for (;;) {
    const { objects } = gen.round();
    try {
      SimulatorSide.of(roundScenario('check', objects));
      return objects;
    } catch (e) {
      if ((e as Error).name !== 'InputError') throw e;
    }
  }
}

export class Differential {
  private readonly probesPerRound: number;
  private readonly log: (line: string) => void;
  private readonly every = allProbes();

  constructor(
    readonly kernel: KernelCluster,
    opts: DifferentialOptions = {},
  ) {
    this.probesPerRound = opts.probesPerRound ?? 60;
    this.log = opts.log ?? (() => undefined);
  }

  /** Applies `scenario` on both sides and compares `probes`. */
  async compare(scenario: Scenario, probes: readonly KernelProbe[]): Promise<Disagreement[]> {
    const side = SimulatorSide.of(scenario);
    await this.kernel.apply(side.resources);
    const results = await Promise.all(
      probes.map(async (probe) => {
        const simulator = side.verdict(probe);
        const kernel = await this.kernel.probe(probe, simulator);
        return { probe, simulator, kernel };
      }),
    );
    return results.filter((r) => r.simulator !== r.kernel);
  }

  /** Runs `rounds` rounds from `seed`; shrinks and logs every failing one. */
  async run(rounds: number, seed: number): Promise<{ rounds: number; probes: number; disagreements: number; failed: RoundResult[] }> {
    const d = new Draw(seededRandom(seed));
    const gen = new PolicyGenerator(d);
    let probes = 0;
    let disagreements = 0;
    const failed: RoundResult[] = [];
    for (let round = 0; round < rounds; round++) {
      const scenario = roundScenario(`differential-seed-${seed}-round-${round}`, validPolicies(gen));
      const sample = this.sample(d);
      const found = await this.compare(scenario, sample);
      probes += sample.length;
      if (found.length === 0) continue;
      disagreements += found.length;
      const result = { round, scenario, probes: sample.length, disagreements: found };
      failed.push(result);
      this.log(`seed ${seed} round ${round}: ${found.length} disagreement(s): ${found.map(describe).join('; ')}`);
      const small = await this.shrink(scenario, found.map((f) => f.probe));
      this.log(`minimal reproducer (seed ${seed} round ${round}):\n${JSON.stringify(reproducerFile(small.scenario, small.disagreements), null, 2)}`);
    }
    return { rounds, probes, disagreements, failed };
  }

  private sample(d: Draw): KernelProbe[] {
    if (this.probesPerRound >= this.every.length) return [...this.every];
    const chosen = new Set<number>();
    while (chosen.size < this.probesPerRound) chosen.add(d.int(0, this.every.length - 1));
    return [...chosen].sort((a, b) => a - b).map((i) => this.every[i]!);
  }

  /**
   * Drops policies, then rules, then single criteria while at least one of `probes` still
   * disagrees (`shrinkScenario`); every attempt is a real apply and real probes.
   */
  shrink(scenario: Scenario, probes: readonly KernelProbe[]): Promise<{ scenario: Scenario; disagreements: Disagreement[] }> {
    return shrinkScenario(scenario, probes, (s, ps) => this.compare(s, ps));
  }
}

/** Errors that make a shrink candidate unusable: InputError (translation), ObjectWriteError (an API server's refusal). */
const UNCOMPARABLE = new Set(['InputError', 'ObjectWriteError']);

/**
 * Drops policies, then rules, then single criteria (a rule side's field, a rule field, a
 * policy's selector) while `compare` still finds at least one difference among `probes` (then
 * among those still differing). A candidate that is UNCOMPARABLE (it no longer translates, or an
 * API server refuses it) is skipped. Returns the smallest scenario found and its differences,
 * which hold as printed.
 */
export async function shrinkScenario<D extends { readonly probe: KernelProbe }>(
  scenario: Scenario,
  probes: readonly KernelProbe[],
  compare: (s: Scenario, probes: readonly KernelProbe[]) => Promise<D[]>,
): Promise<{ scenario: Scenario; disagreements: D[] }> {
  let best = scenario;
  let found = await compare(best, probes);
  if (found.length === 0) return { scenario, disagreements: [] };
  const attempt = async (candidate: Scenario): Promise<boolean> => {
    let next: D[];
    try {
      next = await compare(candidate, found.map((f) => f.probe));
    } catch (e) {
      // A candidate the translation or the API server refuses is no smaller reproducer.
      if (UNCOMPARABLE.has((e as Error).name)) return false;
      throw e;
    }
    if (next.length === 0) return false;
    best = candidate;
    found = next;
    return true;
  };
  for (const candidate of candidatesOf) {
    let progress = true;
    while (progress) {
      progress = false;
      for (const c of candidate(best)) {
        if (await attempt(c)) {
          progress = true;
          break;
        }
      }
    }
  }
  return { scenario: best, disagreements: found };
}

type Obj = Record<string, unknown>;
const withPolicies = (s: Scenario, policies: unknown[]): Scenario => ({ ...s, policies });

/** Shrink steps, coarse to fine; each yields smaller variants of a scenario. */
const candidatesOf: ReadonlyArray<(s: Scenario) => Iterable<Scenario>> = [
  function* dropPolicy(s) {
    for (let i = 0; i < s.policies.length; i++) yield withPolicies(s, s.policies.filter((_, j) => j !== i));
  },
  function* dropRule(s) {
    for (const [i, p] of s.policies.entries()) {
      const spec = ((p as Obj)['spec'] ?? {}) as Obj;
      for (const dir of ['ingress', 'egress']) {
        const rules = spec[dir];
        if (!Array.isArray(rules)) continue;
        for (let r = 0; r < rules.length; r++) {
          const copy = structuredClone(s.policies) as Obj[];
          ((copy[i]!['spec'] as Obj)[dir] as unknown[]).splice(r, 1);
          yield withPolicies(s, copy);
        }
      }
    }
  },
  function* dropField(s) {
    for (const [i] of s.policies.entries()) {
      for (const path of fieldPaths((s.policies[i] as Obj)['spec'], ['spec'])) {
        const copy = structuredClone(s.policies) as Obj[];
        deleteAt(copy[i]!, path);
        yield withPolicies(s, copy);
      }
    }
  },
];

/** Paths of the droppable leaves and list elements below a spec (not rule actions or types). */
function fieldPaths(v: unknown, at: (string | number)[]): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => [[...at, i], ...fieldPaths(x, [...at, i])]);
  if (typeof v !== 'object' || v === null) return [];
  return Object.entries(v as Obj).flatMap(([k, x]) => (k === 'action' || k === 'tier' ? [] : [[...at, k], ...fieldPaths(x, [...at, k])]));
}

function deleteAt(o: Obj, path: readonly (string | number)[]): void {
  let cur: unknown = o;
  for (const k of path.slice(0, -1)) cur = (cur as Obj)[k as string];
  const last = path[path.length - 1]!;
  if (Array.isArray(cur)) cur.splice(last as number, 1);
  else delete (cur as Obj)[last as string];
}

export function describe(d: Disagreement): string {
  const what = d.probe.kind === 'ICMP' ? 'ICMP echo' : `${d.probe.kind}/${d.probe.port}`;
  return `${d.probe.from} → ${d.probe.to} ${what} IPv${d.probe.family}: simulator ${d.simulator ? 'allows' : 'denies'}, kernel ${d.kernel ? 'allows' : 'denies'}`;
}

/**
 * A scenario file (`calico-truth-tables/v1` with `ip6` and `ipVersion`) whose probes expect what
 * the kernel did. ICMP echo probes have no place in the format: they are listed in the
 * description only.
 */
export function reproducerFile(scenario: Scenario, found: readonly Disagreement[]): unknown {
  const probes: ScenarioProbe[] = found
    .filter((f) => f.probe.kind !== 'ICMP')
    .map((f) => ({ from: f.probe.from, to: f.probe.to, port: f.probe.port, protocol: f.probe.kind as 'TCP' | 'UDP', ...(f.probe.family === 6 ? { ipVersion: 6 as const } : {}), expected: f.kernel }));
  return {
    schema: 'calico-truth-tables/v1',
    scenarios: [{ ...scenario, description: `Differential reproducer; the kernel's outcome is expected. ${found.map(describe).join('; ')}.`, probes }],
  };
}
