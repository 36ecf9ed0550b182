/**
 * Bytewise string ordering, as Go's `sort.Strings` and `<` on strings do it.
 *
 * Calico sorts set members (`StringSet`) and k8s matchLabels keys as Go strings, i.e. by
 * their UTF-8 bytes. JavaScript's default `<` compares UTF-16 code units, which differs for
 * non-BMP characters: U+1F600 (surrogates D83D DE00) sorts before U+FF5E in UTF-16 but after
 * it in UTF-8 (F0… > EF…). UTF-8 byte order equals code-point order, so this compares code
 * points without allocating. A lone surrogate compares as its own code unit value (the
 * order WTF-8 gives), which keeps the order total for strings Go could never hold.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const ca = a.charCodeAt(i);
  const cb = b.charCodeAt(i);
  // Neither differing unit is a surrogate: each is a whole code point (any preceding high
  // surrogate was shared and lone), so the code-point sequences first differ right here.
  if (!isSurrogate(ca) && !isSurrogate(cb)) return ca - cb;
  // Otherwise walk code points from the start of the code point containing unit i.
  const start = i > 0 && isHighSurrogate(a.charCodeAt(i - 1)) ? i - 1 : i;
  let ia = start;
  let ib = start;
  while (ia < a.length && ib < b.length) {
    const x = a.codePointAt(ia) ?? 0;
    const y = b.codePointAt(ib) ?? 0;
    if (x !== y) return x - y;
    ia += x > 0xffff ? 2 : 1;
    ib += y > 0xffff ? 2 : 1;
  }
  return a.length - ia - (b.length - ib);
}

function isSurrogate(unit: number): boolean {
  return (unit & 0xf800) === 0xd800;
}

function isHighSurrogate(unit: number): boolean {
  return (unit & 0xfc00) === 0xd800;
}
