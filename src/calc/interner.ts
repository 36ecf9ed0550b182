/**
 * `Interner`: one shared, frozen copy of values that recur across objects — label maps, label
 * values, profile lists, port lists — so 100k endpoints of a few hundred deployments hold a few
 * hundred label maps, not 100k (JSON.parse gives every object its own strings and maps).
 *
 * Guarantees:
 * - `string(s)` returns a string equal to `s`, `strings(a)` a frozen array equal to `a` (an empty
 *   one shared); `held(tag, key)` returns what `hold(tag, key, v)` froze and stored, so a caller
 *   that can name a value by a key (a label map by its pairs) builds it only on a miss;
 * - what it returns is never mutated, so sharing is invisible to callers — the calc graph's
 *   model values are immutable already (model.ts);
 * - bounded: each table is dropped when it reaches `maxEntries`, so distinct values cost one
 *   lookup each and memory stays O(maxEntries) — interning is only ever an optimisation.
 */
import { flat } from '../runtime/flat-string.ts';

export interface InternerOptions {
  /**
   * Entries per table before it is cleared.
   * @default 65536
   */
  readonly maxEntries?: number;
}

const EMPTY_LIST: readonly never[] = Object.freeze([]);

export class Interner {
  readonly #max: number;
  readonly #strings = new Map<string, string>();
  /** tag → key → value: one table per tag, so a lookup hashes the key alone. */
  readonly #keyed = new Map<string, Map<string, object>>();

  constructor(opts: InternerOptions = {}) {
    this.#max = opts.maxEntries ?? 65536;
  }

  string(s: string): string {
    const held = this.#strings.get(s);
    if (held !== undefined) return held;
    if (this.#strings.size >= this.#max) this.#strings.clear();
    this.#strings.set(s, s);
    return s;
  }

  /**
   * What `hold(tag, key, …)` stored, if it is still held. With `hold`, callers that can name a
   * value by a key before building it skip building it (and its garbage) on a hit.
   */
  held<T>(tag: string, key: string): T | undefined {
    return this.#keyed.get(tag)?.get(key) as T | undefined;
  }

  /** Freezes `value`, holds it under (`tag`, `key`) and returns it. */
  hold<T extends object>(tag: string, key: string, value: T): T {
    let table = this.#keyed.get(tag);
    if (table === undefined) this.#keyed.set(tag, (table = new Map()));
    if (table.size >= this.#max) table.clear();
    // The key was built piece by piece: held as a rope it would cost more than the value.
    table.set(flat(key), Object.freeze(value));
    return value;
  }

  /** The shared frozen copy of a list of strings (the strings interned too). */
  strings(items: readonly string[]): readonly string[] {
    if (items.length === 0) return EMPTY_LIST;
    let key = '';
    for (const item of items) key += `${item}\u0000`;
    return this.held<readonly string[]>('strings', key) ?? this.hold('strings', key, items.map((item) => this.string(item)));
  }
}
