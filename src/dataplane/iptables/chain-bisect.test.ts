import { describe, expect, it } from 'vitest';
import { findRejectedChain, type TrialOutcome } from './chain-bisect.ts';

/**
 * A model of the kernel under bisection: a trial fails when a bad chain is written for real
 * (not as a stand-in), or when `brokenElsewhere` (a failure no chain causes). A successful
 * trial commits: the chains it wrote for real are proven good.
 */
function kernel(bad: readonly string[], opts: { brokenElsewhere?: boolean; nameLine?: boolean } = {}) {
  const trials: Array<ReadonlySet<string>> = [];
  const trial = async (standIns: ReadonlySet<string>): Promise<TrialOutcome> => {
    trials.push(standIns);
    const culprit = bad.find((c) => !standIns.has(c));
    if (culprit === undefined && opts.brokenElsewhere !== true) return { ok: true };
    return culprit !== undefined && opts.nameLine === true ? { ok: false, blamed: { chain: culprit, rule: 3 } } : { ok: false };
  };
  return { trial, trials };
}

const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `cali-pi-${String(i).padStart(2, '0')}`);

describe('findRejectedChain', () => {
  it.each([1, 2, 3, 7, 16, 33])('finds the one bad chain among %i in O(log n) trials', async (n) => {
    const suspects = names(n);
    for (const bad of [suspects[0]!, suspects[n - 1]!, suspects[Math.floor(n / 2)]!]) {
      const k = kernel([bad]);
      expect(await findRejectedChain(suspects, k.trial)).toEqual({ chain: bad, rule: undefined });
      expect(k.trials.length).toBeLessThanOrEqual(Math.ceil(Math.log2(n)) + 2);
    }
  });

  it('finds one of several bad chains, keeping every other unproven suspect a stand-in', async () => {
    const suspects = names(8);
    const k = kernel([suspects[2]!, suspects[6]!]);
    const found = await findRejectedChain(suspects, k.trial);
    expect([suspects[2], suspects[6]]).toContain(found?.chain);
  });

  it('answers undefined when the failure persists with every suspect a stand-in (not a chain of ours)', async () => {
    const k = kernel([], { brokenElsewhere: true });
    expect(await findRejectedChain(names(5), k.trial)).toBeUndefined();
    // The last trial wrote every suspect as its stand-in.
    expect(k.trials.at(-1)).toEqual(new Set(names(5)));
  });

  it('stops at the first trial that names a chain', async () => {
    const suspects = names(16);
    const k = kernel([suspects[3]!], { nameLine: true });
    expect(await findRejectedChain(suspects, k.trial)).toEqual({ chain: suspects[3], rule: 3 });
    expect(k.trials).toHaveLength(1);
  });

  it('answers undefined for no suspects', async () => {
    const k = kernel([]);
    expect(await findRejectedChain([], k.trial)).toBeUndefined();
    expect(k.trials).toEqual([]);
  });
});
