/**
 * Kubernetes resource quantities (`k8s.io/apimachinery/pkg/api/resource` `ParseQuantity`,
 * `Quantity.Value`), for the pod annotations Calico reads as quantities (pod-qos-annotations.ts):
 *
 *   <quantity> ::= <sign>? <digits> [ "." <digits>? ] | <sign>? "." <digits>, then a suffix:
 *   binary `Ki Mi Gi Ti Pi Ei` (powers of 1024), decimal `n u m "" k M G T P E`, or an
 *   exponent `e<int>` / `E<int>`.
 *
 * `quantityValue` is `Value()`: the integer value, a fraction rounded up (towards +∞).
 * Arithmetic is exact (BigInt): `1.01k` is 1010, not 1010.0000000000001 rounded to 1011.
 */

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|n|u|m|k|M|G|T|P|E)?$/;

const BINARY: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** A quantity's text is not one (`ParseQuantity`'s `ErrFormatWrong`). */
export class QuantityFormatError extends Error {
  constructor(readonly text: string) {
    super(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got ${JSON.stringify(text)})`);
    this.name = 'QuantityFormatError';
  }
}

/** Ceiling of n / d for d > 0. */
function ceilDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return n % d !== 0n && n > 0n ? q + 1n : q;
}

/**
 * The integer value of `text` (`resource.MustParse(text).Value()`), rounded up.
 * @throws QuantityFormatError when `text` is not a quantity.
 */
export function quantityValue(text: string): bigint {
  const m = QUANTITY.exec(text);
  if (m === null) throw new QuantityFormatError(text);
  const [, sign = '', number = '', suffix = ''] = m;
  const [whole = '', fraction = ''] = number.split('.');
  let mantissa = BigInt(`${whole}${fraction}` || '0');
  if (sign === '-') mantissa = -mantissa;
  let num = mantissa;
  let den = 10n ** BigInt(fraction.length);
  const bin = BINARY[suffix];
  if (bin !== undefined) {
    num *= 1n << BigInt(bin);
  } else {
    const exp = DECIMAL[suffix] ?? Number(suffix.slice(1));
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
  }
  return ceilDiv(num, den);
}
