import { describe, expect, it } from 'vitest';
import { flat } from './flat-string.ts';

describe('flat', () => {
  it('returns the same text, empty strings included', () => {
    let s = '';
    for (let i = 0; i < 20; i++) s += `${i}/`;
    expect(flat(s)).toBe(s);
    expect(flat('')).toBe('');
  });
});
