/**
 * Fisher–Yates shuffle in place with an injectable random source: the Typha client's address
 * order and the server's graceful-shutdown drop order (seeded in tests).
 */
export function shuffle<T>(xs: T[], random: () => number = Math.random): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
  }
  return xs;
}
