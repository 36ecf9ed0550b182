/**
 * The generator draws the shapes issue 27 items 2 and 11 are about, so the randomized
 * differential compares them against real traffic: rules whose only CIDRs are notNets of one
 * family with no ipVersion (probed over both families), source ports and notPorts that cover
 * the whole ephemeral range, namespace profiles with Pass rules, and `services` rule matches
 * (issue 27: egress destinations and ingress sources naming the fixture's Services); and the
 * Felix preset (no tiers, no profiles, distinct orders) and network sets with their selectors.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { PODS, SERVICE_OBJECTS, SERVICE_REFS } from './fixture.ts';
import { Draw, FELIX_V3_28, PolicyGenerator } from './policy-generator.ts';
import { roundScenario, SimulatorSide } from './differential.ts';
import { applyDefaults, cidrContains, isError, parseCidr, SERVICE_NAME_LABEL, validateResource, type V3Resource } from '../../src/api/index.ts';
import { isEndpointSlice } from '../../src/simulate/index.ts';

type Obj = Record<string, unknown>;

function* rulesOf(objects: readonly unknown[]): Generator<{ kind: string; dir: string; rule: Obj }> {
  for (const o of objects as Obj[]) {
    const spec = (o['spec'] ?? {}) as Obj;
    for (const dir of ['ingress', 'egress']) for (const rule of (spec[dir] as Obj[] | undefined) ?? []) yield { kind: o['kind'] as string, dir, rule };
  }
}

const sides = (rule: Obj): Obj[] => [rule['source'], rule['destination']].filter((s): s is Obj => typeof s === 'object' && s !== null);

describe('PolicyGenerator: shapes of issue 27 (seed 20261123, 200 generated rounds)', () => {
  const gen = new PolicyGenerator(new Draw(seededRandom(20261123)));
  const rounds = Array.from({ length: 200 }, () => gen.round().objects);
  const rules = rounds.flatMap((objects) => [...rulesOf(objects)]);

  it('notNets of one family only, without ipVersion, in both families', () => {
    const notNetsOnly = (family: 4 | 6) =>
      rules.filter(({ rule }) => rule['ipVersion'] === undefined && sides(rule).some((s) => Array.isArray(s['notNets']) && (s['notNets'] as string[]).every((n) => n.includes(':') === (family === 6))));
    expect(notNetsOnly(4).length).toBeGreaterThan(10);
    expect(notNetsOnly(6).length).toBeGreaterThan(10);
  });

  it('source ports and notPorts that cover the ephemeral range 32768–60999, and ones below it', () => {
    const covering = ['1024:65535', '32768:60999', '20000:65535', '1:65535'];
    const srcPortsWith = (field: 'ports' | 'notPorts', pred: (p: unknown) => boolean) =>
      rules.filter(({ rule }) => ((rule['source'] as Obj | undefined)?.[field] as unknown[] | undefined)?.some(pred) === true).length;
    expect(srcPortsWith('ports', (p) => covering.includes(p as string))).toBeGreaterThan(5);
    expect(srcPortsWith('notPorts', (p) => covering.includes(p as string))).toBeGreaterThan(5);
    expect(srcPortsWith('ports', (p) => p === 80 || p === 'http')).toBeGreaterThan(5);
  });

  it('namespace profiles replaced with rules that include Pass, keeping the generated labelsToApply', () => {
    const profiles = rounds.flatMap((objects) => (objects as Obj[]).filter((o) => o['kind'] === 'Profile'));
    expect(profiles.length).toBeGreaterThan(20);
    const withPass = profiles.filter((p) => [...rulesOf([p])].some(({ rule }) => rule['action'] === 'Pass'));
    expect(withPass.length).toBeGreaterThan(10);
    for (const p of profiles) {
      const name = ((p['metadata'] as Obj)['name'] as string).slice('kns.'.length);
      expect((p['spec'] as Obj)['labelsToApply']).toMatchObject({ 'pcns.projectcalico.org/name': name, 'pcns.kubernetes.io/metadata.name': name });
    }
  });

  describe('services rule matches', () => {
    const withServices = rules.flatMap(({ kind, dir, rule }) =>
      (['source', 'destination'] as const).flatMap((side) => {
        const e = rule[side] as Obj | undefined;
        return e?.['services'] === undefined ? [] : [{ kind, dir, side, entity: e, ref: e['services'] as { name: string; namespace?: string } }];
      }),
    );

    it('only as an egress destination or an ingress source, never next to a selector, service accounts or nets', () => {
      const where = (dir: string, side: string) => withServices.filter((s) => s.dir === dir && s.side === side).length;
      expect(where('egress', 'destination')).toBeGreaterThan(20);
      expect(where('ingress', 'source')).toBeGreaterThan(20);
      expect(where('egress', 'source') + where('ingress', 'destination')).toBe(0);
      for (const { entity, side } of withServices) {
        const allowed = side === 'source' ? ['services', 'ports', 'notPorts'] : ['services'];
        expect(Object.keys(entity).filter((k) => !allowed.includes(k))).toEqual([]);
      }
    });

    it('source ports next to a source services', () => {
      expect(withServices.filter((s) => s.side === 'source' && (s.entity['ports'] !== undefined || s.entity['notPorts'] !== undefined)).length).toBeGreaterThan(5);
    });

    it('every fixture Service and the missing one, with a namespace in every GlobalNetworkPolicy and sometimes none in a NetworkPolicy', () => {
      for (const ref of SERVICE_REFS) expect(withServices.some((s) => s.ref.name === ref.name && s.ref.namespace === ref.namespace)).toBe(true);
      expect(withServices.filter((s) => s.kind !== 'NetworkPolicy' && s.ref.namespace === undefined)).toEqual([]);
      expect(withServices.filter((s) => s.kind === 'NetworkPolicy' && s.ref.namespace === undefined).length).toBeGreaterThan(5);
    });
  });
});

describe('fixture: the EndpointSlices both sides are fed', () => {
  const slices = SimulatorSide.of(roundScenario('fixture', [])).resources;
  const byService = new Map<string, { addressType: string; addresses: string[]; ports: string[] }[]>();
  for (const r of slices.values()) {
    if (!isEndpointSlice(r)) continue;
    const key = `${r.metadata.namespace}/${r.metadata.labels?.[SERVICE_NAME_LABEL] ?? ''}`;
    const entry = { addressType: r.addressType ?? '', addresses: (r.endpoints ?? []).flatMap((e) => e?.addresses ?? []), ports: (r.ports ?? []).map((p) => `${p?.protocol ?? ''}:${p?.port ?? '-'}`) };
    byService.set(key, [...(byService.get(key) ?? []), entry]);
  }

  it('slices given as is: a targetPort that differs per pod, a UDP port, a portless slice port, an address that is no pod', () => {
    expect(byService.get('alpha/http')).toEqual([
      { addressType: 'IPv4', addresses: ['10.66.1.11'], ports: ['TCP:80'] },
      { addressType: 'IPv4', addresses: ['10.66.1.12', '10.66.9.50'], ports: ['TCP:8080'] },
      { addressType: 'IPv6', addresses: ['fd00:66:1::11'], ports: ['TCP:80'] },
    ]);
    expect(byService.get('gamma/dns')?.flatMap((s) => s.ports)).toEqual(['UDP:53', ':-', 'UDP:5353', 'UDP:53']);
  });

  it('slices derived from v1 Services: named targetPorts resolved on the pod, both families; none for a Service without a selector', () => {
    expect(byService.get('beta/web')).toEqual([
      { addressType: 'IPv4', addresses: ['10.66.2.21'], ports: ['TCP:80', 'UDP:5353'] },
      { addressType: 'IPv6', addresses: ['fd00:66:2::21'], ports: ['TCP:80', 'UDP:5353'] },
    ]);
    expect(byService.has('beta/external')).toBe(false);
    expect(byService.get('gamma/idle')).toEqual([{ addressType: 'IPv4', addresses: [], ports: [] }]);
    expect(SERVICE_OBJECTS.filter((o) => o.kind === 'Service')).toHaveLength(3);
  });
});

const calicoPolicyKinds = new Set(['NetworkPolicy', 'GlobalNetworkPolicy']);
const isCalico = (o: Obj): boolean => o['apiVersion'] === 'projectcalico.org/v3';
const valid = (o: Obj): boolean => validateResource(applyDefaults(structuredClone(o) as unknown as V3Resource)).filter(isError).length === 0;

describe('PolicyGenerator with FELIX_V3_28 (seed 20261127, 300 rounds)', () => {
  const gen = new PolicyGenerator(new Draw(seededRandom(20261127)), FELIX_V3_28);
  const rounds = Array.from({ length: 300 }, () => gen.round().objects as Obj[]);

  it('draws no Tier, no tier field and no kns profile', () => {
    for (const objects of rounds) {
      expect(objects.filter((o) => o['kind'] === 'Tier' || o['kind'] === 'Profile')).toEqual([]);
      for (const o of objects) expect((o['spec'] as Obj | undefined)?.['tier']).toBeUndefined();
    }
  });

  it('gives the Calico policies of a round distinct orders, absent at most once and never 1000', () => {
    let absent = 0;
    for (const objects of rounds) {
      const orders = objects.filter((o) => isCalico(o) && calicoPolicyKinds.has(o['kind'] as string)).map((o) => (o['spec'] as Obj)['order'] as number | undefined);
      expect(new Set(orders).size).toBe(orders.length);
      expect(orders).not.toContain(1000);
      absent += orders.filter((o) => o === undefined).length;
    }
    expect(absent).toBeGreaterThan(50);
  });

  it('still draws network sets, and every Calico object validates', () => {
    expect(rounds.filter((objects) => objects.some((o) => o['kind'] === 'GlobalNetworkSet')).length).toBeGreaterThan(100);
    for (const o of rounds.flat()) if (isCalico(o)) expect(valid(o)).toBe(true);
  });
});

describe('PolicyGenerator: what FELIX_V3_28 leaves out for the two Felix defects and the v3.28 validator (seed 20261129, 300 rounds each)', () => {
  const draw = (opts: object) => {
    const gen = new PolicyGenerator(new Draw(seededRandom(20261129)), opts);
    return [...rulesOf(Array.from({ length: 300 }, () => gen.round().objects).flat())];
  };
  const felix = draw(FELIX_V3_28);
  const all = draw({});
  const hasPorts = (r: Obj) => sides(r).some((side) => side['ports'] !== undefined || side['notPorts'] !== undefined);
  const portsWithoutProtocol = (r: Obj) => hasPorts(r) && !['TCP', 'UDP', 'SCTP', 6, 17, 132].includes(r['protocol'] as string);
  const servicesWithoutNamespace = (r: Obj) => sides(r).some((side) => typeof side['services'] === 'object' && (side['services'] as Obj)['namespace'] === undefined);

  it('never protocol next to notProtocol (Felix renders two -p flags and exits); by default it does', () => {
    expect(felix.filter(({ rule }) => rule['protocol'] !== undefined && rule['notProtocol'] !== undefined)).toEqual([]);
    expect(felix.filter(({ rule }) => rule['notProtocol'] !== undefined).length).toBeGreaterThan(20);
    expect(all.filter(({ rule }) => rule['protocol'] !== undefined && rule['notProtocol'] !== undefined).length).toBeGreaterThan(10);
  });

  it('never a services match without a namespace (Felix matches nothing there); by default it does', () => {
    expect(felix.filter(({ rule }) => servicesWithoutNamespace(rule))).toEqual([]);
    expect(felix.filter(({ rule }) => sides(rule).some((side) => side['services'] !== undefined)).length).toBeGreaterThan(50);
    expect(all.filter(({ rule }) => servicesWithoutNamespace(rule)).length).toBeGreaterThan(5);
  });

  it("never ports without TCP/UDP (v3.28's validator refuses them, Felix drops the policy); by default named ones appear", () => {
    expect(felix.filter(({ rule }) => portsWithoutProtocol(rule))).toEqual([]);
    expect(felix.filter(({ rule }) => hasPorts(rule)).length).toBeGreaterThan(50);
    expect(all.filter(({ rule }) => portsWithoutProtocol(rule)).length).toBeGreaterThan(10);
  });
});

describe('PolicyGenerator: network sets (seed 20261128, 300 rounds, default options)', () => {
  const gen = new PolicyGenerator(new Draw(seededRandom(20261128)));
  const rounds = Array.from({ length: 300 }, () => gen.round().objects as Obj[]);
  const sets = rounds.flatMap((objects) => objects.filter((o) => o['kind'] === 'NetworkSet' || o['kind'] === 'GlobalNetworkSet'));
  const nets = sets.flatMap((s) => ((s['spec'] as Obj)['nets'] as string[]) ?? []);
  const rules = rounds.flatMap((objects) => [...rulesOf(objects)]);
  const selectors = rules.flatMap(({ rule }) => sides(rule).flatMap((s) => [s['selector'], s['notSelector']].filter((x): x is string => typeof x === 'string')));

  it('appear in about half the rounds, both kinds, NetworkSets in the fixture namespaces, before every policy', () => {
    const withSets = rounds.filter((objects) => objects.some((o) => o['kind'] === 'GlobalNetworkSet'));
    expect(withSets.length).toBeGreaterThan(100);
    expect(withSets.length).toBeLessThan(200);
    const namespaces = new Set(sets.filter((s) => s['kind'] === 'NetworkSet').map((s) => (s['metadata'] as Obj)['namespace']));
    expect([...namespaces].sort()).toEqual(['alpha', 'beta', 'gamma']);
    for (const objects of rounds) {
      const kinds = objects.map((o) => o['kind'] as string);
      const lastSet = Math.max(kinds.lastIndexOf('NetworkSet'), kinds.lastIndexOf('GlobalNetworkSet'));
      const firstPolicy = objects.findIndex((o) => o['kind'] === 'NetworkPolicy' || o['kind'] === 'GlobalNetworkPolicy');
      expect(lastSet).toBeLessThan(firstPolicy);
    }
  });

  it('hold nets of both families, with and without pod addresses, and labels without projectcalico.org/namespace', () => {
    const podNet = (n: string): boolean => {
      const outer = parseCidr(n);
      return outer.ok && PODS.some((p) => cidrContains(outer.value, p.ip) || cidrContains(outer.value, p.ip6));
    };
    expect(nets.filter((n) => n.includes(':') && podNet(n)).length).toBeGreaterThan(20);
    expect(nets.filter((n) => !n.includes(':') && podNet(n)).length).toBeGreaterThan(20);
    expect(nets.filter((n) => !podNet(n)).length).toBeGreaterThan(20);
    for (const s of sets) {
      expect(Object.keys(((s['metadata'] as Obj)['labels'] as Obj | undefined) ?? {})).not.toContain('projectcalico.org/namespace');
      expect(valid(s)).toBe(true);
    }
  });

  it('are selected by rule entities, alone and next to a namespaceSelector, in both policy kinds', () => {
    const setTerm = (s: string): boolean => /\b(set|zone)\b/.test(s);
    expect(selectors.filter(setTerm).length).toBeGreaterThan(100);
    const scoped = (kind: string) => rules.filter(({ kind: k, rule }) => k === kind && sides(rule).some((s) => typeof s['selector'] === 'string' && setTerm(s['selector']) && s['namespaceSelector'] !== undefined)).length;
    expect(scoped('GlobalNetworkPolicy')).toBeGreaterThan(5);
    expect(scoped('NetworkPolicy')).toBeGreaterThan(5);
  });

  it('keeps tiers and namespace profiles by default', () => {
    expect(rounds.filter((objects) => objects.some((o) => o['kind'] === 'Tier')).length).toBeGreaterThan(50);
    expect(rounds.filter((objects) => objects.some((o) => o['kind'] === 'Profile')).length).toBeGreaterThan(50);
  });
});
