/**
 * The differentials' host endpoints (issue 29): the generator's `hostEndpoints` option draws
 * HostEndpoints as Calico validates them and GlobalNetworkPolicy host flags only in the
 * combinations Calico's validator accepts, with selectors, nets and ports that pick the hosts
 * out — and draws exactly what it drew before when the option is off (seeds keep their rounds);
 * the fixture's nodes are valid scenario `nodes`, and the host probes are valid scenario probes
 * of the five kinds the brief names, added after the unchanged pod probes.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { applyDefaults, isError, validateResource, type V3Resource } from '../../src/api/index.ts';
import { nodeProblems, nodesByName, probeNodeProblem, isNodeEndpoint } from '../../src/simulate/scenario-nodes.ts';
import { FIXTURE_NODES, HOST_PORTS, NODES, PODS, podKey } from './fixture.ts';
import { allProbes, hostEndpointsFromEnv, hostProbes, roundScenario } from './differential.ts';
import { fieldCoverage } from './field-coverage.ts';
import { DEFAULT_HOST_ENDPOINTS, Draw, FELIX_V3_28, PolicyGenerator, type GeneratorOptions } from './policy-generator.ts';

type Obj = Record<string, unknown>;

const roundsOf = (opts: GeneratorOptions, n = 200, seed = 20261127): Obj[][] => {
  const gen = new PolicyGenerator(new Draw(seededRandom(seed)), opts);
  return Array.from({ length: n }, () => gen.round().objects as unknown as Obj[]);
};
const ofKind = (rounds: Obj[][], kind: string): Obj[] => rounds.flat().filter((o) => o['kind'] === kind);
const specOf = (o: Obj): Obj => (o['spec'] ?? {}) as Obj;

describe('hostEndpointsFromEnv: the one switch of every differential entry point', () => {
  it('is DEFAULT_HOST_ENDPOINTS unless TESSERA_DIFFERENTIAL_HOST_ENDPOINTS says, and refuses what is no probability', () => {
    expect(hostEndpointsFromEnv({})).toBe(DEFAULT_HOST_ENDPOINTS);
    expect(hostEndpointsFromEnv({ TESSERA_DIFFERENTIAL_HOST_ENDPOINTS: '' })).toBe(DEFAULT_HOST_ENDPOINTS);
    expect(hostEndpointsFromEnv({ TESSERA_DIFFERENTIAL_HOST_ENDPOINTS: '0.5' })).toBe(0.5);
    for (const bad of ['1.5', '-0.1', 'on', 'NaN']) expect(() => hostEndpointsFromEnv({ TESSERA_DIFFERENTIAL_HOST_ENDPOINTS: bad })).toThrow(/not a probability/);
  });
});

describe('PolicyGenerator hostEndpoints off (the default)', () => {
  it('draws no HostEndpoint, no host flag and no host term, and the same rounds as without the option', () => {
    for (const preset of [{}, FELIX_V3_28]) {
      const plain = roundsOf(preset, 100, 28);
      expect(roundsOf({ ...preset, hostEndpoints: 0 }, 100, 28)).toEqual(plain);
      const json = JSON.stringify(plain);
      expect(ofKind(plain, 'HostEndpoint')).toEqual([]);
      for (const text of ['doNotTrack', 'preDNAT', 'applyOnForward', "hep == 'a'", "zone == 'east'", 'ssh', '10.66.0.0/24']) expect(json).not.toContain(text);
    }
  });
});

describe('PolicyGenerator hostEndpoints 0.5 with FELIX_V3_28 (200 rounds, seed 20261127)', () => {
  const rounds = roundsOf({ ...FELIX_V3_28, hostEndpoints: 0.5 });
  const heps = ofKind(rounds, 'HostEndpoint');
  const gnps = ofKind(rounds, 'GlobalNetworkPolicy');

  it('puts HostEndpoints in about half the rounds, 1–4 per round', () => {
    const withHeps = rounds.filter((r) => r.some((o) => o['kind'] === 'HostEndpoint')).length;
    expect(withHeps).toBeGreaterThan(70);
    expect(withHeps).toBeLessThan(130);
    for (const r of rounds) expect(r.filter((o) => o['kind'] === 'HostEndpoint').length).toBeLessThanOrEqual(4);
  });

  it('draws every HostEndpoint as Calico validates it: a fixture node, and `*` or the node’s expectedIPs; never a named interface', () => {
    for (const h of heps) {
      const spec = specOf(h) as { node?: string; interfaceName?: string; expectedIPs?: string[] };
      const node = FIXTURE_NODES.find((n) => n.name === spec.node);
      expect(node, JSON.stringify(h)).toBeDefined();
      expect(spec.interfaceName === '*' || (spec.interfaceName === undefined && (spec.expectedIPs?.length ?? 0) > 0), JSON.stringify(h)).toBe(true);
      for (const ip of spec.expectedIPs ?? []) expect([node!.ip, node!.ip6]).toContain(ip);
      expect(((h['metadata'] as Obj)['name'] as string).startsWith(`${spec.node}-hep-`)).toBe(true);
    }
    const kinds = (pred: (s: Obj) => boolean) => heps.filter((h) => pred(specOf(h))).length;
    expect(kinds((s) => s['interfaceName'] === '*')).toBeGreaterThan(40);
    expect(kinds((s) => s['interfaceName'] === '*' && s['expectedIPs'] !== undefined)).toBeGreaterThan(20);
    expect(kinds((s) => s['interfaceName'] === undefined)).toBeGreaterThan(20);
    expect(kinds((s) => Array.isArray(s['profiles']) && (s['profiles'] as string[]).includes('projectcalico-default-allow'))).toBeGreaterThan(30);
    // A namespace's profile: its labelsToApply become the endpoint's labels.
    expect(kinds((s) => Array.isArray(s['profiles']) && (s['profiles'] as string[]).some((p) => p.startsWith('kns.')))).toBeGreaterThan(10);
    expect(kinds((s) => Array.isArray(s['ports']) && (s['ports'] as Obj[]).every((p) => typeof p['name'] === 'string' && typeof p['port'] === 'number' && (p['protocol'] === 'TCP' || p['protocol'] === 'UDP')))).toBeGreaterThan(20);
    expect(heps.filter((h) => ((h['metadata'] as Obj)['labels'] as Obj)['zone'] !== undefined).length).toBeGreaterThan(20);
  });

  it('sometimes two `*` HostEndpoints on one node (the smaller name is the default)', () => {
    const twoStars = rounds.filter((r) => NODES.some((n) => r.filter((o) => o['kind'] === 'HostEndpoint' && specOf(o)['node'] === n && specOf(o)['interfaceName'] === '*').length === 2));
    expect(twoStars.length).toBeGreaterThan(3);
  });

  it('draws the host flags only as Calico’s validator accepts them, each of them often, never on a namespaced policy', () => {
    for (const p of gnps) {
      const s = specOf(p);
      if (s['preDNAT'] === true) {
        expect(s['doNotTrack']).toBeUndefined();
        expect(s['egress']).toBeUndefined();
        expect((s['types'] as string[] | undefined) ?? []).not.toContain('Egress');
      }
      if (s['preDNAT'] === true || s['doNotTrack'] === true) expect(s['applyOnForward']).toBe(true);
      expect(validateResource(applyDefaults(structuredClone(p) as unknown as V3Resource)).filter(isError)).toEqual([]);
    }
    const count = (pred: (s: Obj) => boolean) => gnps.filter((p) => pred(specOf(p))).length;
    expect(count((s) => s['preDNAT'] === true)).toBeGreaterThan(20);
    expect(count((s) => s['doNotTrack'] === true)).toBeGreaterThan(20);
    expect(count((s) => s['applyOnForward'] === true && s['preDNAT'] === undefined && s['doNotTrack'] === undefined)).toBeGreaterThan(20);
    expect(count((s) => s['applyOnForward'] === false)).toBeGreaterThan(3);
    expect(count((s) => s['preDNAT'] === true && Array.isArray(s['ingress']) && (s['ingress'] as unknown[]).length > 0)).toBeGreaterThan(10);
    for (const p of ofKind(rounds, 'NetworkPolicy')) for (const f of ['doNotTrack', 'preDNAT', 'applyOnForward']) expect(specOf(p)[f]).toBeUndefined();
  });

  it('draws doNotTrack policy in rounds with a `*` HostEndpoint (Felix ignores it there, as Tessera must)', () => {
    const both = rounds.filter((r) => r.some((o) => o['kind'] === 'HostEndpoint' && specOf(o)['interfaceName'] === '*') && r.some((o) => specOf(o)['doNotTrack'] === true));
    expect(both.length).toBeGreaterThan(5);
  });

  it('selects HostEndpoints by their labels in policy selectors and rule peers, and names host nets and ports', () => {
    const json = JSON.stringify(gnps);
    for (const term of ["hep == 'a'", 'has(hep)', "zone == 'east'", "kubernetes.io/hostname == 'node-2'"]) expect(json).toContain(term);
    const peers = gnps.flatMap((p) => ['ingress', 'egress'].flatMap((d) => ((specOf(p)[d] as Obj[] | undefined) ?? []).flatMap((r) => [r['source'], r['destination']] as Obj[])));
    expect(peers.filter((e) => typeof e?.['selector'] === 'string' && /hep|zone|node-role|hostname/.test(e['selector'] as string)).length).toBeGreaterThan(10);
    expect(JSON.stringify(rounds)).toContain('10.66.0.2/32');
    expect(JSON.stringify(rounds)).toContain('"ssh"');
  });

  it('counts the host fields in field coverage', () => {
    const coverage = fieldCoverage(rounds.flat());
    for (const key of ['kind=HostEndpoint', 'HostEndpoint.spec.expectedIPs', 'HostEndpoint.spec.ports[].name', 'interfaceName=*', 'doNotTrack=true', 'preDNAT=true', 'applyOnForward=true', 'applyOnForward=false', 'profiles=projectcalico-default-allow']) {
      expect(coverage.get(key) ?? 0, key).toBeGreaterThan(0);
    }
  });
});

describe('PolicyGenerator hostInterfaceNames', () => {
  it('names each node’s uplink, and only that', () => {
    const heps = ofKind(roundsOf({ ...FELIX_V3_28, hostEndpoints: 1, hostInterfaceNames: true }, 100), 'HostEndpoint');
    const named = heps.filter((h) => specOf(h)['interfaceName'] !== undefined && specOf(h)['interfaceName'] !== '*');
    expect(named.length).toBeGreaterThan(10);
    for (const h of named) expect(specOf(h)['interfaceName']).toBe(FIXTURE_NODES.find((n) => n.name === specOf(h)['node'])!.uplink);
  });
});

describe('the fixture as hosts', () => {
  const scenario = roundScenario('hosts', [], { hosts: true });
  const nodes = nodesByName(scenario.nodes);

  it('lists the fixture nodes as valid scenario nodes, addressed apart from every pod, serving TCP 22 (a failsafe port)', () => {
    expect(scenario.nodes?.map((n) => n.name)).toEqual([...NODES]);
    expect(nodeProblems(scenario.nodes, PODS.flatMap((p) => [p.ip, p.ip6]))).toEqual([]);
    expect(HOST_PORTS).toContainEqual({ port: 22, protocol: 'TCP' });
    expect(roundScenario('pods', []).nodes).toBeUndefined();
  });

  it('keeps the 300 pod probes as they were and adds the host probes after them, each valid for the scenario', () => {
    const pods = allProbes();
    expect(pods).toHaveLength(300);
    expect(pods.every((p) => !isNodeEndpoint(p.from) && !isNodeEndpoint(p.to))).toBe(true);
    const all = allProbes({ hosts: true });
    expect(all.slice(0, 300)).toEqual(pods);
    expect(all.slice(300)).toEqual(hostProbes());
    for (const p of hostProbes()) if (p.kind !== 'ICMP') expect(probeNodeProblem({ from: p.from, to: p.to, port: p.port, protocol: p.kind, ipVersion: p.family }, nodes), JSON.stringify(p)).toBeUndefined();
  });

  it('probes host → local pod, host → remote pod, pod → own host, pod → other host and host → other host, over both families with ICMP echo', () => {
    const nodeOf = new Map(PODS.map((p) => [podKey(p), p.node]));
    const kinds = new Map<string, number>();
    for (const p of hostProbes()) {
      const [from, to] = [p.from, p.to];
      const kind = isNodeEndpoint(from) && isNodeEndpoint(to) ? 'host → other host' : isNodeEndpoint(from) ? (nodeOf.get(to) === from ? 'host → local pod' : 'host → remote pod') : nodeOf.get(from) === to ? 'pod → own host' : 'pod → other host';
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    // 3 pods per node; 4 pod ports + ICMP, or 3 host ports + ICMP; two families.
    expect(Object.fromEntries(kinds)).toEqual({ 'host → local pod': 60, 'host → remote pod': 60, 'pod → own host': 48, 'pod → other host': 48, 'host → other host': 16 });
    expect(hostProbes().filter((p) => p.kind === 'ICMP' && p.family === 6).length).toBe(26);
  });
});
