import { describe, expect, it } from 'vitest';
import { compareUtf8 } from './byte-order.ts';

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

describe('compareUtf8', () => {
  it('orders ASCII like bytes: upper case before lower case, shorter prefix first', () => {
    expect(['b', 'a', 'B', 'ab', ''].sort(compareUtf8)).toEqual(['', 'B', 'a', 'ab', 'b']);
  });
  it('orders astral characters after U+E000..U+FFFF, unlike UTF-16 comparison', () => {
    expect(compareUtf8('\u{1F600}', '\uFF5E')).toBeGreaterThan(0);
    expect('\u{1F600}' < '\uFF5E').toBe(true);
  });
  it('agrees with Buffer.compare on UTF-8 for a spread of well-formed strings', () => {
    const samples = ['', 'a', 'z', 'é', 'ü', '\u07ff', '\u0800', '\uffff', '\ue000', '\u{10000}', '\u{1F600}', '\u{10FFFF}', 'a\u{1F600}', 'a\uFF5E', 'aa'];
    for (const a of samples) {
      for (const b of samples) expect(Math.sign(compareUtf8(a, b))).toBe(Math.sign(utf8Order(a, b)));
    }
  });
  it('gives a total order including lone surrogates', () => {
    const values = ['\ud83d', '\ud83dx', '\ud83d\ude00', '\ude00', '\ue000', 'x'];
    const sorted = [...values].sort(compareUtf8);
    for (let i = 1; i < sorted.length; i++) expect(compareUtf8(sorted[i - 1] as string, sorted[i] as string)).toBeLessThan(0);
  });
});
