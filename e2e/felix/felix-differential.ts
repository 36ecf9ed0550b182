/**
 * The Felix differential: Calico's own Felix as the oracle. Each round is a scenario — the
 * fixture's namespaces, pods and Services plus random Calico v3 and Kubernetes objects drawn by
 * the kernel differential's generator restricted to what Felix v3.28 has (`FELIX_V3_28`) — and
 * is written to one real API server (felix-cluster.ts), where it is enforced twice on identical
 * network-namespace clusters:
 * - by **Felix**, reading the Calico objects as `crd.projectcalico.org/v1` and converting the
 *   Kubernetes NetworkPolicies, Namespaces, ServiceAccounts and Pods itself;
 * - by **Tessera** as a user runs it (tessera-agents.ts): the same objects as
 *   `projectcalico.org/v3`, `tessera controllers` converting the Kubernetes objects, one
 *   `tessera agent` per node — and, for free, Tessera's verdict engine (`tessera simulate`'s
 *   reading of the scenario).
 * The same probes (TCP and UDP on four ports, ICMP echo; IPv4 and IPv6; every ordered pod pair;
 * with `hostEndpoints`, also the host probes — differential.ts `hostProbes`) run through both. A probe where Felix's outcome differs from Tessera's dataplane or from
 * Tessera's verdict engine is a difference; it is probed again on both clusters with a slow
 * timeout before it counts (a slow flow is not a verdict). A failing round is shrunk and
 * printed as a scenario file whose probes expect what Felix did.
 */
import type { KubernetesObject } from '@kubernetes/client-node';

import type { Scenario } from '../../src/simulate/scenario-file.ts';
import { isEndpointSlice } from '../../src/simulate/index.ts';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { allProbes, reproducerFile, roundScenario, shrinkScenario, SimulatorSide, validPolicies } from '../differential/differential.ts';
import { fieldCoverage } from '../differential/field-coverage.ts';
import type { KernelProbe } from '../differential/kernel-cluster.ts';
import { Draw, FELIX_V3_28, PolicyGenerator } from '../differential/policy-generator.ts';
import { felixObject, type FelixCluster } from './felix-cluster.ts';

/** One probe whose outcomes differ: Felix's, Tessera's agents', Tessera's verdict engine's. */
export interface FelixDifference {
  readonly probe: KernelProbe;
  readonly felix: boolean;
  /** Undefined when the cluster runs no Tessera (`withTessera: false`: Felix against the verdict engine only). */
  readonly tessera: boolean | undefined;
  readonly simulator: boolean;
}

export interface FelixRoundResult {
  readonly round: number;
  readonly scenario: Scenario;
  readonly differences: readonly FelixDifference[];
}

export interface FelixDifferentialResult {
  readonly rounds: number;
  readonly probes: number;
  readonly differences: number;
  readonly failed: readonly FelixRoundResult[];
  /**
   * Rounds whose objects the API server (Calico's CRD schema) or Felix's own validator refused:
   * each a parity finding between Tessera's validation and Calico v3.28's, not a verdict.
   */
  readonly refused: readonly string[];
  /** Probes Felix let through (the rest it denied): a round of all-allow would test little. */
  readonly allowed: number;
  /** Field path → rounds that drew it (field-coverage.ts). */
  readonly coverage: ReadonlyMap<string, number>;
}

/** The Kubernetes objects Felix reads for `scenario` (its EndpointSlices as Tessera derives them). */
export function felixObjectsOf(scenario: Scenario, side: SimulatorSide): KubernetesObject[] {
  const out: KubernetesObject[] = [];
  for (const o of scenario.policies as Record<string, unknown>[]) {
    if (o['kind'] === 'EndpointSlice') continue;
    out.push(felixObject(o));
  }
  for (const r of side.resources.values()) if (isEndpointSlice(r)) out.push(felixObject(r as unknown as Record<string, unknown>));
  return out;
}

/** The Calico objects of `scenario` as Tessera reads them: `projectcalico.org/v3`, as written. */
export function tesseraObjectsOf(scenario: Scenario): KubernetesObject[] {
  return (scenario.policies as KubernetesObject[]).filter((o) => o.apiVersion === 'projectcalico.org/v3').map((o) => structuredClone(o));
}

export function describeDifference(d: FelixDifference): string {
  const what = d.probe.kind === 'ICMP' ? 'ICMP echo' : `${d.probe.kind}/${d.probe.port}`;
  const v = (b: boolean) => (b ? 'allows' : 'denies');
  const agents = d.tessera === undefined ? '' : `, Tessera's agents ${v(d.tessera)}`;
  return `${d.probe.from} → ${d.probe.to} ${what} IPv${d.probe.family}: Felix ${v(d.felix)}${agents}, ${d.tessera === undefined ? "Tessera's" : 'its'} verdict engine ${v(d.simulator)}`;
}

export interface FelixDifferentialOptions {
  readonly log?: (line: string) => void;
  /**
   * The probability that a round holds HostEndpoints (policy-generator.ts `hostEndpoints`,
   * with the `FELIX_V3_28` preset); above 0 the rounds also draw the GlobalNetworkPolicy host
   * flags, list the fixture's nodes, and probe the hosts too (`allProbes({ hosts: true })`).
   * Named-interface HostEndpoints are not drawn: the verdict engine, the third voice, knows a
   * node's interface by its addresses only.
   * @default 0
   */
  readonly hostEndpoints?: number;
}

export class FelixDifferential {
  private readonly every: readonly KernelProbe[];
  private readonly log: (line: string) => void;
  private readonly hostEndpoints: number;
  /** Probes Felix let through, over every `compare` so far. */
  allowed = 0;

  constructor(
    readonly cluster: FelixCluster,
    opts: FelixDifferentialOptions = {},
  ) {
    this.log = opts.log ?? (() => undefined);
    this.hostEndpoints = opts.hostEndpoints ?? 0;
    this.every = allProbes({ hosts: this.hostEndpoints > 0 });
  }

  /** The probes every round runs. */
  get probesPerRound(): number {
    return this.every.length;
  }

  /**
   * Applies `scenario` on both clusters and compares `probes` (all of them by default). A
   * cluster without Tessera (`withTessera: false`) compares Felix with the verdict engine only.
   */
  async compare(scenario: Scenario, probes: readonly KernelProbe[] = this.every): Promise<FelixDifference[]> {
    const side = SimulatorSide.of(scenario);
    const withTessera = this.cluster.tessera !== undefined;
    await this.cluster.apply([...felixObjectsOf(scenario, side), ...(withTessera ? tesseraObjectsOf(scenario) : [])]);
    const tesseraProbe = (p: KernelProbe, expectAllowed: boolean): Promise<boolean | undefined> => (withTessera ? this.cluster.probeTessera(p, expectAllowed) : Promise.resolve(undefined));
    const differs = (r: FelixDifference): boolean => (r.tessera !== undefined && r.felix !== r.tessera) || r.felix !== r.simulator;
    const first = await Promise.all(
      probes.map(async (probe) => {
        const simulator = side.verdict(probe);
        const [tessera, felix] = await Promise.all([tesseraProbe(probe, simulator), this.cluster.probe(probe, simulator)]);
        return { probe, felix, tessera, simulator };
      }),
    );
    this.allowed += first.filter((r) => r.felix).length;
    // Probed again, each side with the slow timeout for an answer it lacked.
    const again = await Promise.all(
      first.filter(differs).map(async (r) => {
        const [tessera, felix] = await Promise.all([tesseraProbe(r.probe, true), this.cluster.probe(r.probe, true)]);
        return { ...r, felix, tessera };
      }),
    );
    return again.filter(differs);
  }

  /** Runs `rounds` rounds from `seed`; shrinks and logs every failing one. */
  async run(rounds: number, seed: number): Promise<FelixDifferentialResult> {
    const d = new Draw(seededRandom(seed));
    const hosts = this.hostEndpoints > 0;
    const gen = new PolicyGenerator(d, { ...FELIX_V3_28, hostEndpoints: this.hostEndpoints });
    const coverage = new Map<string, number>();
    const failed: FelixRoundResult[] = [];
    const refused: string[] = [];
    let probes = 0;
    let differences = 0;
    const allowedBefore = this.allowed;
    for (let round = 0; round < rounds; round++) {
      const scenario = roundScenario(`felix-differential-seed-${seed}-round-${round}`, validPolicies(gen, { hosts }), { hosts });
      for (const [field, n] of fieldCoverage(scenario.policies.filter((o) => !isFixtureObject(o)))) coverage.set(field, (coverage.get(field) ?? 0) + (n > 0 ? 1 : 0));
      let found: FelixDifference[];
      try {
        found = await this.compare(scenario);
      } catch (e) {
        if ((e as Error).name !== 'ObjectWriteError') throw e;
        refused.push(`seed ${seed} round ${round}: ${(e as Error).message}`);
        this.log(refused[refused.length - 1]!);
        continue;
      }
      probes += this.every.length;
      if (round % 50 === 49) this.log(`seed ${seed}: ${round + 1} rounds, ${probes} probes, ${differences} differences so far`);
      if (found.length === 0) continue;
      differences += found.length;
      failed.push({ round, scenario, differences: found });
      this.log(`seed ${seed} round ${round}: ${found.length} difference(s): ${found.map(describeDifference).join('; ')}`);
      const small = await this.shrink(scenario, found.map((f) => f.probe));
      this.log(`minimal reproducer (seed ${seed} round ${round}):\n${JSON.stringify(felixReproducer(small.scenario, small.disagreements), null, 2)}`);
    }
    return { rounds, probes, differences, failed, refused, coverage, allowed: this.allowed - allowedBefore };
  }

  shrink(scenario: Scenario, probes: readonly KernelProbe[]): Promise<{ scenario: Scenario; disagreements: FelixDifference[] }> {
    return shrinkScenario(scenario, probes, (s, ps) => this.compare(s, ps));
  }
}

/** The fixture's own Services and EndpointSlices, which every round carries. */
function isFixtureObject(o: unknown): boolean {
  const kind = (o as { kind?: string }).kind;
  return kind === 'Service' || kind === 'EndpointSlice';
}

/** A scenario file whose probes expect what Felix did (the kernel differential's format). */
export function felixReproducer(scenario: Scenario, found: readonly FelixDifference[]): unknown {
  const file = reproducerFile(
    scenario,
    found.map((f) => ({ probe: f.probe, simulator: f.simulator, kernel: f.felix })),
  ) as { scenarios: Array<{ description: string }> };
  file.scenarios[0]!.description = `Felix differential reproducer; Felix's outcome is expected. ${found.map(describeDifference).join('; ')}.`;
  return file;
}
