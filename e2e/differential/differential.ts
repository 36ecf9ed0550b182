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
import { endpointInFamily, translateCluster, Simulation, type SimPeer } from '../../src/simulate/index.ts';
import { initialState, stateObjects, type Scenario, type ScenarioProbe } from '../../src/simulate/scenario-file.ts';
import { isNodeEndpoint } from '../../src/simulate/scenario-nodes.ts';
import type { ProbeProtocol } from '../../src/simulate/verdict-engine.ts';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { ENDPOINT_TO_HOST_ACTION, FAILSAFES, FIXTURE_NODES, HOST_PORTS, NAMESPACES, PODS, SERVED_PORTS, SERVICE_OBJECTS, podKey } from './fixture.ts';
import { KernelCluster, type KernelProbe } from './kernel-cluster.ts';
import { DEFAULT_HOST_ENDPOINTS, Draw, PolicyGenerator } from './policy-generator.ts';

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

/**
 * The share of rounds with HostEndpoints every differential entry point uses (the kernel and
 * Felix differentials' vitest files and benches): `TESSERA_DIFFERENTIAL_HOST_ENDPOINTS` when set,
 * else {@link DEFAULT_HOST_ENDPOINTS}.
 * @throws Error when the variable is not a probability
 */
export function hostEndpointsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const text = env['TESSERA_DIFFERENTIAL_HOST_ENDPOINTS'];
  if (text === undefined || text === '') return DEFAULT_HOST_ENDPOINTS;
  const p = Number(text);
  if (!(p >= 0 && p <= 1)) throw new Error(`TESSERA_DIFFERENTIAL_HOST_ENDPOINTS=${JSON.stringify(text)} is not a probability (0–1)`);
  return p;
}

export interface DifferentialOptions {
  /** Probes per round, drawn from every (pair, port or ICMP, family). @default 60 */
  readonly probesPerRound?: number;
  /**
   * The probability that a round holds HostEndpoints (policy-generator.ts `hostEndpoints`);
   * above 0 the rounds also draw the GlobalNetworkPolicy host flags and host selector terms,
   * the scenarios list the fixture's nodes, and the probes include the host probes
   * (`allProbes({ hosts: true })`).
   * @default 0
   */
  readonly hostEndpoints?: number;
  /** Where progress and reproducers go. @default nothing */
  readonly log?: (line: string) => void;
}

/**
 * Every probe the fixture offers: ordered pod pairs × (served ports + ICMP echo) × families;
 * with `hosts`, the host probes after them ({@link hostProbes}).
 */
export function allProbes(opts: { readonly hosts?: boolean } = {}): KernelProbe[] {
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
  return opts.hosts === true ? [...out, ...hostProbes()] : out;
}

type ProbeTarget = { readonly kind: KernelProbe['kind']; readonly port: number };
const targetsOf = (ports: ReadonlyArray<{ readonly port: number; readonly protocol: 'TCP' | 'UDP' }>): ProbeTarget[] => [...ports.map((p) => ({ kind: p.protocol, port: p.port })), { kind: 'ICMP', port: 0 }];

/**
 * The probes with a node ({@link FIXTURE_NODES}) at one end, each over both families: host →
 * every pod (its own node's and the other's) on the pods' ports, every pod → both hosts on the
 * hosts' ports, host → the other host; ICMP echo beside every port list.
 */
export function hostProbes(): KernelProbe[] {
  const out: KernelProbe[] = [];
  const add = (from: string, to: string, targets: readonly ProbeTarget[]): void => {
    for (const family of [4, 6] as const) for (const t of targets) out.push({ from, to, kind: t.kind, port: t.port, family });
  };
  for (const node of FIXTURE_NODES) for (const pod of PODS) add(node.name, podKey(pod), targetsOf(SERVED_PORTS));
  for (const pod of PODS) for (const node of FIXTURE_NODES) add(podKey(pod), node.name, targetsOf(HOST_PORTS));
  for (const node of FIXTURE_NODES) for (const other of FIXTURE_NODES) if (other !== node) add(node.name, other.name, targetsOf(HOST_PORTS));
  return out;
}

/**
 * The scenario of one round: the fixture plus `policies`. The fixture's Services and
 * EndpointSlices go first among the scenario's objects (a scenario file carries them there),
 * so the shrinker may drop those a reproducer does not need.
 */
export function roundScenario(name: string, policies: readonly unknown[], opts: { readonly hosts?: boolean } = {}): Scenario {
  return {
    name,
    namespaces: NAMESPACES.map((n) => ({ name: n.name, labels: { ...n.labels } })),
    ...(opts.hosts === true ? { nodes: FIXTURE_NODES.map((n) => ({ name: n.name, labels: { ...n.labels }, ip: n.ip, ip6: n.ip6, hostPorts: HOST_PORTS.map((h) => ({ ...h })) })) } : {}),
    pods: PODS.map((p) => ({ ...p, labels: { ...p.labels }, containerPorts: [...(p.containerPorts ?? [])] })),
    policies: [...structuredClone(SERVICE_OBJECTS), ...policies],
    probes: [],
  };
}

/** The simulator's side: the scenario's translated resources and a verdict per probe. */
export class SimulatorSide {
  readonly sim: Simulation;

  constructor(
    readonly resources: ReturnType<typeof translateCluster>['resources'],
    hosts: NonNullable<Scenario['nodes']> = [],
  ) {
    const addresses = hosts.map((n) => ({ name: n.name, addresses: [n.ip, ...(n.ip6 === undefined ? [] : [n.ip6])] }));
    this.sim = new Simulation(resources, { hosts: addresses, endpointToHostAction: ENDPOINT_TO_HOST_ACTION, failsafes: FAILSAFES });
  }

  /** @throws InputError when the scenario holds an invalid object (as `simulate` would). */
  static of(scenario: Scenario): SimulatorSide {
    const notes: string[] = [];
    return new SimulatorSide(translateCluster(stateObjects(initialState(scenario), notes)).resources, scenario.nodes ?? []);
  }

  /**
   * The whole path's verdict (`Simulation.verdict`: with host endpoints, every stage a packet
   * crosses), with the differential's DefaultEndpointToHostAction and failsafe ports (fixture.ts).
   */
  verdict(p: KernelProbe): boolean {
    const from = this.peer(p.from, p.family);
    const to = this.peer(p.to, p.family);
    // `verdict` types its protocol as a scenario probe's; its packet (makePacket) takes ICMP echo too.
    return this.sim.verdict(from, to, p.kind as ProbeProtocol, p.port).allowed;
  }

  private peer(id: string, family: 4 | 6): SimPeer {
    if (isNodeEndpoint(id)) {
      const host = this.sim.hostFor(id, family);
      if (host === undefined) throw new Error(`SimulatorSide: the verdict engine knows no host ${id} with an IPv${family} address`);
      return host;
    }
    const ep = this.sim.endpointFor(id);
    if (ep === undefined) throw new Error(`SimulatorSide: no endpoint for ${id}`);
    const inFamily = endpointInFamily(ep, family);
    if (inFamily === undefined) throw new Error(`SimulatorSide: ${id} has no IPv${family} address`);
    return inFamily;
  }
}

/**
 * A round's objects that translate without an InputError (regenerated until they do). Gives up
 * after 1,000 refused rounds with the last refusal: then the translation refuses something the
 * generator always draws (a kind it does not know, say), and no round would ever come.
 */
export function validPolicies(gen: PolicyGenerator, opts: { readonly hosts?: boolean } = {}): readonly unknown[] {
  let last: unknown;
  for (let attempt = 0; attempt < 1_000; attempt++) {
    const { objects } = gen.round();
    try {
      SimulatorSide.of(roundScenario('check', objects, opts));
      return objects;
    } catch (e) {
      if ((e as Error).name !== 'InputError') throw e;
      last = e;
    }
  }
  throw last;
}

export class Differential {
  private readonly probesPerRound: number;
  private readonly log: (line: string) => void;
  private readonly hostEndpoints: number;
  private readonly every: readonly KernelProbe[];

  constructor(
    readonly kernel: KernelCluster,
    opts: DifferentialOptions = {},
  ) {
    this.probesPerRound = opts.probesPerRound ?? 60;
    this.log = opts.log ?? (() => undefined);
    this.hostEndpoints = opts.hostEndpoints ?? 0;
    this.every = allProbes({ hosts: this.hostEndpoints > 0 });
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
    const hosts = this.hostEndpoints > 0;
    const gen = new PolicyGenerator(d, { hostEndpoints: this.hostEndpoints });
    let probes = 0;
    let disagreements = 0;
    const failed: RoundResult[] = [];
    for (let round = 0; round < rounds; round++) {
      const scenario = roundScenario(`differential-seed-${seed}-round-${round}`, validPolicies(gen, { hosts }), { hosts });
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
