import { describe, expect, it } from 'vitest';
import { ACCEPT, DROP, jump } from '../action.ts';
import type { ChainRule } from '../chain.ts';
import { ANY } from '../match.ts';
import { DesiredChains, hashesOf } from './desired-chains.ts';

const drop: ChainRule = { match: ANY, action: DROP };
const accept: ChainRule = { match: ANY, action: ACCEPT };

function setup() {
  const changes: string[] = [];
  const desired = new DesiredChains((name) => changes.push(name));
  let renders = 0;
  const lazy = (name: string, rules: readonly ChainRule[]) => ({
    name,
    render: () => {
      renders++;
      return rules;
    },
  });
  return { desired, changes, lazy, renders: () => renders };
}

describe('DesiredChains: lazy on-demand chains', () => {
  it('renders a lazy chain on the first read of its rules, once, and not when it becomes programmed', () => {
    const { desired, lazy, renders } = setup();
    desired.update(lazy('cali-pi-a', [drop, drop]), { onDemand: true });
    desired.update({ name: 'cali-tw-x', rules: [{ match: ANY, action: jump('cali-pi-a') }] });
    expect(desired.effective('cali-pi-a')?.rendered).toBe(false);
    expect(renders()).toBe(0);
    expect(desired.get('cali-pi-a')!.tails).toEqual(['-j DROP', '-j DROP']);
    void desired.get('cali-pi-a')!.rules;
    expect(renders()).toBe(1);
  });

  it('counts a programmed lazy chain\'s rules once rendered; `programmed` renders what it counts', () => {
    const { desired, lazy, renders } = setup();
    desired.update(lazy('cali-pi-a', [drop, drop, drop]), { onDemand: true });
    desired.update({ name: 'cali-tw-x', rules: [{ match: ANY, action: jump('cali-pi-a') }] });
    expect(desired.programmed).toEqual({ chains: 2, rules: 4 });
    expect(renders()).toBe(1);
    desired.update({ name: 'cali-tw-x', rules: [] });
    expect(desired.programmed).toEqual({ chains: 1, rules: 0 });
  });

  it('never renders an unreferenced lazy chain for the counts', () => {
    const { desired, lazy, renders } = setup();
    desired.update(lazy('cali-pi-a', [drop]), { onDemand: true });
    expect(desired.programmed).toEqual({ chains: 0, rules: 0 });
    expect(renders()).toBe(0);
  });

  it('renders at once a lazy chain replacing a rendered one: the same rules again change nothing and keep the version', () => {
    const { desired, changes, lazy } = setup();
    desired.update(lazy('cali-pi-a', [drop]), { onDemand: true });
    const first = desired.get('cali-pi-a')!;
    void first.rules;
    changes.length = 0;
    desired.update(lazy('cali-pi-a', [drop]), { onDemand: true });
    expect(changes).toEqual([]);
    expect(desired.get('cali-pi-a')).toBe(first);
    desired.update(lazy('cali-pi-a', [accept]), { onDemand: true });
    expect(changes).toEqual(['cali-pi-a']);
    expect(desired.get('cali-pi-a')!.rendered).toBe(true);
  });

  it('replaces an unrendered lazy chain without rendering either', () => {
    const { desired, changes, lazy, renders } = setup();
    desired.update(lazy('cali-pi-a', [drop]), { onDemand: true });
    desired.update(lazy('cali-pi-a', [accept]), { onDemand: true });
    expect(changes).toEqual(['cali-pi-a', 'cali-pi-a']);
    expect(renders()).toBe(0);
    expect(desired.get('cali-pi-a')!.tails).toEqual(['-j ACCEPT']);
  });

  it('refuses a lazy always-on chain (its jump targets are needed at once)', () => {
    const { desired, lazy } = setup();
    expect(() => desired.update(lazy('cali-tw-x', [drop]))).toThrow(RangeError);
  });
});

describe('DesiredChains: tails released once written', () => {
  it('keeps the tails until the hashes are known, then renders them again from the rules when asked', () => {
    const { desired, lazy, renders } = setup();
    desired.update(lazy('cali-pi-a', [drop, accept]), { onDemand: true });
    const d = desired.get('cali-pi-a')!;
    const tails = d.tails;
    d.releaseTails();
    // No hashes yet: nothing is dropped (the write still needs the texts).
    expect(d.tails).toBe(tails);
    const hashes = hashesOf('cali-pi-a', d);
    d.releaseTails();
    expect(d.tails).not.toBe(tails);
    expect(d.tails).toEqual(['-j DROP', '-j ACCEPT']);
    expect(hashesOf('cali-pi-a', d)).toBe(hashes);
    expect(renders()).toBe(1);
  });

  it('an update with the same rules after a release changes nothing; different rules replace the chain', () => {
    const { desired, changes } = setup();
    desired.update({ name: 'cali-tw-x', rules: [drop, accept] });
    const d = desired.get('cali-tw-x')!;
    hashesOf('cali-tw-x', d);
    d.releaseTails();
    changes.length = 0;
    desired.update({ name: 'cali-tw-x', rules: [drop, accept] });
    expect(changes).toEqual([]);
    expect(desired.get('cali-tw-x')).toBe(d);
    desired.update({ name: 'cali-tw-x', rules: [accept] });
    expect(changes).toEqual(['cali-tw-x']);
    expect(desired.get('cali-tw-x')!.tails).toEqual(['-j ACCEPT']);
  });
});
