import { describe, expect, it } from 'vitest';
import { QuantityFormatError, quantityValue } from './quantity.ts';

describe('quantityValue (Kubernetes resource.Quantity Value())', () => {
  it.each([
    ['100', 100n],
    ['1k', 1000n],
    ['10M', 10_000_000n],
    ['1P', 10n ** 15n],
    ['1.01k', 1010n],
    ['1.01P', 1_010_000_000_000_000n],
    ['4Gi', 4294967296n],
    ['1Ki', 1024n],
    ['1e3', 1000n],
    ['1E3', 1000n],
    ['2E', 2_000_000_000_000_000_000n],
    ['1.5', 2n],
    ['500m', 1n],
    ['.5k', 500n],
    ['5.', 5n],
    ['+7', 7n],
    ['-3', -3n],
    ['-1.5', -1n],
  ])('%s is %s', (text, value) => {
    expect(quantityValue(text)).toBe(value);
  });

  it.each(['', ' 1', '1 ', 'k', '1kb', '1.2.3', '1K', 'ten', '1e', '0x10'])('%j is not a quantity', (text) => {
    expect(() => quantityValue(text)).toThrow(QuantityFormatError);
  });
});
