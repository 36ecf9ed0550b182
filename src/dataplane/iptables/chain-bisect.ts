/**
 * Finding the chain to blame for a restore that fails without naming a usable line — legacy
 * iptables reports `line N failed` at `COMMIT` when the kernel refuses the table whole — by
 * bisecting the suspects (issue 12 point 6).
 *
 * A trial is one real transaction that writes every dirty chain, except that the suspects in
 * `standIns` are written as their fail-closed stand-ins (a DROP) instead of their desired
 * rules. A trial that succeeds is committed, so what it proved good stays written; what it
 * wrote as stand-ins drops traffic until a later trial writes it for real — the search never
 * programs anything more permissive than the desired state.
 *
 * Invariant: a chain to blame is among `candidates`, or nothing of ours is — which the last
 * step checks with every suspect written as its stand-in. Each halving costs one restore:
 * O(log n) restores per chain found.
 */

/** What one trial did: succeeded, failed naming a chain it wrote for real, or just failed. */
export type TrialOutcome = { readonly ok: true } | { readonly ok: false; readonly blamed?: { readonly chain: string; readonly rule: number | undefined } };

/**
 * Returns the chain to blame (and its rule when a trial named one), or undefined when the
 * failure persists with every suspect written as its stand-in — not a chain's content.
 * `trial(standIns)` writes the chains in `standIns` as stand-ins and everything else for real.
 */
export async function findRejectedChain(
  suspects: readonly string[],
  trial: (standIns: ReadonlySet<string>) => Promise<TrialOutcome>,
): Promise<{ readonly chain: string; readonly rule: number | undefined } | undefined> {
  /** Suspects not yet proven good (written for real by a trial that succeeded). */
  let unproven = new Set(suspects);
  let candidates = [...suspects];
  const except = (names: readonly string[]): Set<string> => {
    const out = new Set(unproven);
    for (const n of names) out.delete(n);
    return out;
  };
  /** Whether the last trial wrote exactly the one remaining candidate for real, and failed. */
  let lastAloneFailed = false;
  while (candidates.length > 1) {
    const half = candidates.slice(0, Math.ceil(candidates.length / 2));
    const r = await trial(except(half));
    if (r.ok) {
      unproven = except(half);
      candidates = candidates.slice(half.length);
    } else if (r.blamed !== undefined) {
      return r.blamed;
    } else {
      candidates = half;
      lastAloneFailed = half.length === 1;
    }
  }
  const [last] = candidates;
  if (last === undefined) return undefined;
  if (!lastAloneFailed) {
    const alone = await trial(except([last]));
    if (alone.ok) return undefined;
    if (alone.blamed !== undefined) return alone.blamed;
  }
  // `last` written for real fails; check the failure goes away without it.
  const control = await trial(unproven);
  return control.ok ? { chain: last, rule: undefined } : undefined;
}
