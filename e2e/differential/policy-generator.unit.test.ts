/**
 * The generator draws the shapes issue 27 items 2 and 11 are about, so the randomized
 * differential compares them against real traffic: rules whose only CIDRs are notNets of one
 * family with no ipVersion (probed over both families), source ports and notPorts that cover
 * the whole ephemeral range, and namespace profiles with Pass rules.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { Draw, PolicyGenerator } from './policy-generator.ts';

type Obj = Record<string, unknown>;

function* rulesOf(objects: readonly unknown[]): Generator<{ kind: string; rule: Obj }> {
  for (const o of objects as Obj[]) {
    const spec = (o['spec'] ?? {}) as Obj;
    for (const dir of ['ingress', 'egress']) for (const rule of (spec[dir] as Obj[] | undefined) ?? []) yield { kind: o['kind'] as string, rule };
  }
}

const sides = (rule: Obj): Obj[] => [rule['source'], rule['destination']].filter((s): s is Obj => typeof s === 'object' && s !== null);

describe('PolicyGenerator: shapes of issue 27 items 2 and 11 (seed 20261123, 200 generated rounds)', () => {
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
});
