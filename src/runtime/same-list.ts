/**
 * `sameList(a, b, eq?)`: whether two lists hold equal elements in the same order — the
 * "did this change?" test that lets an index skip work when an object is re-sent unchanged
 * (an endpoint's addresses, an index function's values, a chain's rule hashes).
 *
 * - Order matters: `['a', 'b']` and `['b', 'a']` differ. Callers that mean "same set" sort
 *   first or compare sets.
 * - Elements compare with `===` unless `eq` is given; `eq` must be reflexive, because the same
 *   array (`a === b`) is the same list without a look at its elements.
 * - Allocates nothing: it runs on hot update paths.
 */
export function sameList<T>(a: readonly T[], b: readonly T[], eq?: (x: T, y: T) => boolean): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  // Two loops, not a default `eq`: the plain `===` loop stays free of a call per element.
  if (eq === undefined) {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  } else {
    for (let i = 0; i < a.length; i++) if (!eq(a[i] as T, b[i] as T)) return false;
  }
  return true;
}
