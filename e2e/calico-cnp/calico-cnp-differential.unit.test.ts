/**
 * Randomized differential of Tessera's ClusterNetworkPolicy converter against Calico's own
 * (README.md here): seeded random policies, each converted by
 * `convertClusterNetworkPolicy` and by Calico's `K8sClusterNetworkPolicyToCalico` (the
 * calico-cnp program, `make calico-cnp`), compared field by field after normalising only the
 * documented deliberate differences (compare.ts). A difference fails the test with the seed,
 * the round and the input minimised.
 *
 * Rounds and seed: TESSERA_CNP_DIFF_ROUNDS (default 500) valid policies plus a fifth as many
 * fail-closed ones; TESSERA_CNP_DIFF_SEED (default 20261128).
 */
import { describe, expect, it } from 'vitest';

import type { ClusterNetworkPolicy } from '../../src/api/cluster-network-policy.ts';
import { validateClusterNetworkPolicy } from '../../src/api/cluster-network-policy-validation.ts';
import { isError } from '../../src/api/field-error.ts';
import { isValidEndpointPortName } from '../../src/api/names.ts';
import { convertClusterNetworkPolicy, type CnpDirection } from '../../src/convert/cluster-network-policy-converter.ts';
import { seededRandom } from '../../src/runtime/seeded-random.ts';
import { CALICO_COMMIT, calicoCnpBinary, calicoConvert, haveCalicoCnp, type CalicoAnswer } from './calico-oracle.ts';
import { Draw, FAIL_CLOSED_KINDS, failClosedCnp, validCnp } from './cnp-generator.ts';
import { differences, normalise, UNPARSEABLE, type NormalPolicy, type NormalRule } from './compare.ts';

type Json = Record<string, unknown>;

const ROUNDS = Number(process.env['TESSERA_CNP_DIFF_ROUNDS'] ?? 500);
const SEED = Number(process.env['TESSERA_CNP_DIFF_SEED'] ?? 20261128);
const have = haveCalicoCnp();
/** Generous, and scaled: a long run (TESSERA_CNP_DIFF_ROUNDS) takes about 1 ms a round. */
const TIMEOUT = 30_000 + ROUNDS * 20;
if (!have) {
  console.warn(
    `SKIPPING the Calico ClusterNetworkPolicy differential: ${calicoCnpBinary()} is absent. ` +
      `Run \`make calico-cnp\` (builds Calico ${CALICO_COMMIT.slice(0, 12)}'s converter from a projectcalico/calico git clone, CALICO_GIT_DIR; e2e/calico-cnp/README.md).`,
  );
}

const valid = (cnp: unknown): boolean => !validateClusterNetworkPolicy(cnp, { channel: 'experimental' }).some(isError);

function tesseraSide(cnp: unknown): NormalPolicy | null {
  const r = convertClusterNetworkPolicy(cnp as ClusterNetworkPolicy, []);
  return r.policy === null ? null : normalise(r.policy.spec as unknown as Json, 'tessera');
}

function calicoSide(a: CalicoAnswer): NormalPolicy | null {
  if (a.decodeError !== undefined) throw new Error(`calico-cnp could not decode: ${a.decodeError}`);
  return a.policy === null ? null : normalise(a.policy, 'calico');
}

/** Every JSON value one step smaller than `v`: one array element or one object key fewer, at any depth. */
function reductions(v: unknown): unknown[] {
  if (Array.isArray(v)) {
    const out: unknown[] = v.map((_, i) => [...v.slice(0, i), ...v.slice(i + 1)]);
    v.forEach((x, i) => reductions(x).forEach((y) => out.push(v.map((z, j) => (j === i ? y : z)))));
    return out;
  }
  if (typeof v === 'object' && v !== null) {
    const o = v as Json;
    const out: unknown[] = [];
    for (const k of Object.keys(o)) {
      const { [k]: _dropped, ...rest } = o;
      out.push(rest);
      reductions(o[k]).forEach((y) => out.push({ ...o, [k]: y }));
    }
    return out;
  }
  return [];
}

/** Shrinks `cnp` while it stays valid and the two sides still differ. */
function minimise(cnp: unknown): unknown {
  let current = cnp;
  for (;;) {
    const candidates = reductions(current).filter(valid);
    const answers = calicoConvert(candidates);
    const i = candidates.findIndex((c, k) => differences(calicoSide(answers[k] as CalicoAnswer), tesseraSide(c)).length > 0);
    if (i < 0) return current;
    current = candidates[i];
  }
}

/** A LabelSelector expression metav1 rejects and the CRD admits: In/NotIn without values, Exists/DoesNotExist with some. */
function hasValuesMismatch(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasValuesMismatch);
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Json;
  if (typeof o['operator'] === 'string' && typeof o['key'] === 'string') {
    const values = Array.isArray(o['values']) ? o['values'].length : 0;
    return (o['operator'] === 'In' || o['operator'] === 'NotIn') !== values > 0;
  }
  return Object.values(o).some(hasValuesMismatch);
}

/** Whether a side's selectors include text the selector parser rejects. */
const unparseable = (v: unknown): boolean => JSON.stringify(v).includes(UNPARSEABLE);

const bareDeny = (): NormalRule => ({ action: 'Deny', protocol: '', name: '', source: empty(), destination: empty() });

/** What Tessera must emit for a CNP rule it fails closed (converter module comment). */
const failedClosed = (action: unknown): NormalRule[] => (action === 'Deny' || action === 'Pass' ? [bareDeny()] : []);

/**
 * A policy where the sides differ and some selector is one of the documented fail-closed inputs
 * (text Calico writes but its parser cannot read, a metav1-invalid expression), checked rule by
 * rule, each CNP rule alone: Tessera fails exactly those rules closed (or, for the subject, places
 * no policy) and agrees with Calico on every other. Returns the problems.
 */
function checkRuleByRule(cnp: Json, calicoWhole: NormalPolicy | null, tesseraWhole: NormalPolicy | null): string[] {
  const spec = cnp['spec'] as Json;
  const subjectBad = hasValuesMismatch(spec['subject']) || unparseable([calicoWhole?.selector, calicoWhole?.namespaceSelector]);
  if (subjectBad) return tesseraWhole === null ? [] : ['the subject fails closed in Calico\'s terms but Tessera placed a policy'];
  const singles: { direction: CnpDirection; index: number; rule: Json; cnp: Json }[] = [];
  for (const direction of ['ingress', 'egress'] as const) {
    ((spec[direction] as Json[] | undefined) ?? []).forEach((rule, index) => {
      const { ingress: _i, egress: _e, ...rest } = spec;
      singles.push({ direction, index, rule, cnp: { ...cnp, spec: { ...rest, [direction]: [rule] } } });
    });
  }
  const answers = calicoConvert(singles.map((x) => x.cnp));
  const problems: string[] = [];
  singles.forEach(({ direction, index, rule, cnp: one }, k) => {
    const calico = calicoSide(answers[k] as CalicoAnswer);
    const tessera = tesseraSide(one);
    const documented = hasValuesMismatch(rule) || unparseable(calico);
    const expected = documented ? { ...(calico as NormalPolicy), [direction]: failedClosed(rule['action']) } : calico;
    const diff = differences({ ...expected, types: [] }, { ...tessera, types: [] });
    if (diff.length > 0) problems.push(`${direction}[${index}]${documented ? ' (fails closed by design)' : ''}: ${diff.join('; ')}`);
  });
  return problems;
}

describe.skipIf(!have)(`Tessera's ClusterNetworkPolicy converter against Calico ${CALICO_COMMIT.slice(0, 12)} (seed ${SEED})`, () => {
  it(`agrees on ${ROUNDS} random valid policies once the documented differences are normalised`, () => {
    const d = new Draw(seededRandom(SEED));
    const cnps: Json[] = [];
    let rejected = 0;
    while (cnps.length < ROUNDS) {
      // About one policy in seven may hold label text no Kubernetes object can carry (generator comment).
      const cnp = validCnp({ d, oddLabels: d.chance(0.15) }, `cnp-${cnps.length}`);
      if (valid(cnp)) cnps.push(cnp);
      else rejected++;
    }
    const answers = calicoConvert(cnps);
    const found: string[] = [];
    let calicoRules = 0;
    let documented = 0;
    cnps.forEach((cnp, round) => {
      const calico = calicoSide(answers[round] as CalicoAnswer);
      const tessera = tesseraSide(cnp);
      calicoRules += (calico?.ingress.length ?? 0) + (calico?.egress.length ?? 0);
      const diff = differences(calico, tessera);
      if (diff.length === 0) return;
      if (hasValuesMismatch(cnp) || unparseable(calico)) {
        documented++;
        const problems = checkRuleByRule(cnp, calico, tessera);
        if (problems.length > 0) found.push(`round ${round}: ${problems.join('; ')}\n  input ${JSON.stringify(cnp)}`);
        return;
      }
      if (found.length < 5) {
        const small = minimise(cnp);
        found.push(`round ${round}: ${diff.slice(0, 4).join('; ')}\n  input ${JSON.stringify(cnp)}\n  minimised ${JSON.stringify(small)}\n  → ${differences(calicoSide(calicoConvert([small])[0] as CalicoAnswer), tesseraSide(small)).join('; ')}`);
      } else found.push(`round ${round}`);
    });
    console.info(
      `calico-cnp differential: seed ${SEED}, ${ROUNDS} valid policies (${rejected} drawn and rejected by validation), ${calicoRules} Calico rules compared, ` +
        `${documented} differing only where Tessera fails closed by design (checked rule by rule), ${found.length} other differences`,
    );
    expect(found).toEqual([]);
  }, TIMEOUT);

  it(`is at least as narrow as Calico on ${Math.ceil(ROUNDS / 5)} policies with a fail-closed input`, () => {
    const g = { d: new Draw(seededRandom(SEED ^ 0x5eed)), oddLabels: false };
    const d = g.d;
    const cases = Array.from({ length: Math.ceil(ROUNDS / 5) }, (_, i) => {
      const direction: CnpDirection = d.chance(0.5) ? 'ingress' : 'egress';
      const kind = FAIL_CLOSED_KINDS[i % FAIL_CLOSED_KINDS.length] as (typeof FAIL_CLOSED_KINDS)[number];
      return { direction, kind, cnp: failClosedCnp(g, `fc-${i}`, direction, kind) };
    });
    const answers = calicoConvert(cases.map((c) => c.cnp));
    const found: string[] = [];
    let widened = 0;
    cases.forEach(({ direction, kind, cnp }, round) => {
      const calico = calicoSide(answers[round] as CalicoAnswer);
      const tessera = tesseraSide(cnp);
      if (calico === null || tessera === null) {
        found.push(`round ${round} (${kind}): a side gave no policy: ${JSON.stringify({ calico, tessera })}`);
        return;
      }
      const other: CnpDirection = direction === 'ingress' ? 'egress' : 'ingress';
      const bad = ((cnp['spec'] as Json)[direction] as Json[])[0] as Json;
      const ours = tessera[direction];
      const theirs = calico[direction];
      const key = (r: unknown): string => JSON.stringify(r);
      const narrow =
        kind === 'non-IANA named port'
          ? // The unusable names are left out (a rule left with none is not emitted); all else is Calico's.
            key(ours) === key(theirs.filter((r) => r.destination.ports.length === 0 || withoutUnusablePorts(r).destination.ports.length > 0).map(withoutUnusablePorts))
          : // Tessera fails the rule closed (Calico's stand-in); for domainNames and {} Calico does too.
            key(ours) === key(failedClosed(bad['action'])) && (!(kind === 'domainNames peer' || kind === 'empty peer') || key(ours) === key(theirs));
      if (!narrow) found.push(`round ${round} (${kind}, ${String(bad['action'])}): Tessera ${JSON.stringify(ours)} vs Calico ${JSON.stringify(theirs)}\n  input ${JSON.stringify(cnp)}`);
      const rest = differences({ ...calico, [direction]: [], types: [] }, { ...tessera, [direction]: [], types: [] });
      if (rest.length > 0) found.push(`round ${round} (${kind}): the ${other} rules or the policy differ: ${rest.join('; ')}`);
      if (key(ours) !== key(theirs)) widened++;
    });
    console.info(`calico-cnp differential: ${cases.length} fail-closed policies, Calico differs (wider) on ${widened}, Tessera not at least as narrow on ${found.length}`);
    expect(found).toEqual([]);
  }, TIMEOUT);
});

/** A Calico rule without the named ports no container port can have (Kubernetes validates pod port names as IANA service names). */
function withoutUnusablePorts(r: NormalRule): NormalRule {
  return { ...r, destination: { ...r.destination, ports: r.destination.ports.filter((p) => !p.startsWith('named ') || isValidEndpointPortName(p.slice('named '.length))) } };
}

function empty(): { selector: string; namespaceSelector: string; nets: string[]; ports: string[] } {
  return { selector: '', namespaceSelector: '', nets: [], ports: [] };
}
