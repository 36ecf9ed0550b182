/**
 * A seeded pseudo-random source (mulberry32) for property and churn tests and the fuzzer:
 * the same seed gives the same sequence on every machine, so a failure reproduces from its
 * seed alone. Not for anything security-related.
 */

/** Returns a function yielding numbers in [0, 1), fully determined by `seed`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
