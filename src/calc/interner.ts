/**
 * `Interner`: one shared, frozen copy of values that recur across objects — label maps, label
 * values, profile lists, port lists — so 100k endpoints of a few hundred deployments hold a few
 * hundred label maps, not 100k (JSON.parse gives every object its own strings and maps).
 *
 * Guarantees:
 * - `labels(m)` returns a frozen map equal to `m` (same keys and values, same order), `list(a)`
 *   a frozen array equal to `a`; an empty input gives one shared empty value;
 * - what it returns is never mutated, so sharing is invisible to callers — the calc graph's
 *   model values are immutable already (model.ts);
 * - bounded: each table is dropped when it reaches `maxEntries`, so distinct values cost one
 *   lookup each and memory stays O(maxEntries) — interning is only ever an optimisation.
 */
import type { Labels } from './label-inherit-index.ts';

export interface InternerOptions {
  /**
   * Entries per table before it is cleared.
   * @default 65536
   */
  readonly maxEntries?: number;
}

const EMPTY_LABELS: Labels = Object.freeze({});
const EMPTY_LIST: readonly never[] = Object.freeze([]);

export class Interner {
  readonly #max: number;
  readonly #strings = new Map<string, string>();
  readonly #labels = new Map<string, Labels>();
  readonly #lists = new Map<string, readonly unknown[]>();

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

  /** The shared frozen copy of `m` (keys and values interned too). */
  labels(m: Readonly<Record<string, string>>): Labels {
    let key = '';
    for (const k in m) {
      if (!Object.prototype.hasOwnProperty.call(m, k)) continue;
      // NUL cannot appear in a label key or value (validation), so it separates unambiguously.
      key += `${k}\u0000${m[k] as string}\u0000`;
    }
    if (key === '') return EMPTY_LABELS;
    const held = this.#labels.get(key);
    if (held !== undefined) return held;
    const copy: Record<string, string> = {};
    for (const k in m) if (Object.prototype.hasOwnProperty.call(m, k)) copy[this.string(k)] = this.string(m[k] as string);
    Object.freeze(copy);
    if (this.#labels.size >= this.#max) this.#labels.clear();
    this.#labels.set(key, copy);
    return copy;
  }

  /** The shared frozen copy of a list of strings (the strings interned too). */
  strings(items: readonly string[]): readonly string[] {
    return this.#list('s', items, (s) => s, () => items.map((s) => this.string(s)));
  }

  /**
   * The shared frozen copy of a list whose items `keyOf` identifies: equal keys, in order, mean
   * equal lists (the first list seen with those keys is the one kept).
   */
  list<T>(tag: string, items: readonly T[], keyOf: (item: T) => string): readonly T[] {
    return this.#list(`l${tag}`, items, keyOf, () => [...items]);
  }

  /** `tag` names the item type, so lists of different types never share a key. */
  #list<T>(tag: string, items: readonly T[], keyOf: (item: T) => string, copy: () => T[]): readonly T[] {
    if (items.length === 0) return EMPTY_LIST;
    let key = `${tag}\u0000`;
    for (const item of items) key += `${keyOf(item)}\u0000`;
    const held = this.#lists.get(key);
    if (held !== undefined) return held as readonly T[];
    const frozen = Object.freeze(copy());
    if (this.#lists.size >= this.#max) this.#lists.clear();
    this.#lists.set(key, frozen);
    return frozen;
  }
}
