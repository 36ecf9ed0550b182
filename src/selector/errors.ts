/**
 * The one error type the selector parser throws.
 *
 * Invariants:
 * - `parseSelector` throws a `SelectorParseError` and nothing else for every bad input,
 *   whatever its size or nesting, so callers (validators, the calc graph) can catch this
 *   one class and treat anything else as a bug.
 * - `position` is the 0-based UTF-16 offset into the selector text where the problem was
 *   found (for "unexpected end" errors it equals the input length); the message repeats it
 *   as a 1-based `column` so it can be shown to users as is:
 *   `unexpected token '&&' at column 7`.
 */
export class SelectorParseError extends Error {
  override readonly name = 'SelectorParseError';
  /** 0-based offset into `selector` at which parsing failed. */
  readonly position: number;
  /** The problem without the location, e.g. `unexpected token '&&'`. */
  readonly reason: string;
  /** The selector text that failed to parse. */
  readonly selector: string;

  constructor(reason: string, position: number, selector: string) {
    super(`${reason} at column ${position + 1}`);
    this.reason = reason;
    this.position = position;
    this.selector = selector;
  }
}
