import { expect } from 'vitest';
import { SelectorParseError } from '../../src/selector/errors.ts';
import { parseSelector } from '../../src/selector/parser.ts';

/** Parses `text`, expecting a `SelectorParseError`, and returns it (fails the test otherwise). */
export function rejects(text: string): SelectorParseError {
  try {
    parseSelector(text);
  } catch (e) {
    expect(e).toBeInstanceOf(SelectorParseError);
    return e as SelectorParseError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}
