/**
 * `LabelInheritIndex`: which selectors match which items, where an item's labels are its
 * own labels plus those inherited from an ordered list of parents (Felix:
 * `labelindex/label_inheritance_index.go`, calico-semantics §2.3, §5.3).
 *
 * Guarantees:
 * - effective labels: the item's own labels win, then earlier parents over later ones; the
 *   merged map is rebuilt only when the item or one of its parents changes, and is a plain
 *   object so selector evaluation stays allocation-free;
 * - `onMatchStarted(selectorId, itemId)` / `onMatchStopped(...)` fire on every transition
 *   caused by an item, parent or selector change, and each pair starts and stops exactly
 *   once (deleting a selector or an item stops all of its matches);
 * - candidates come from label restrictions (§1.10), never from a full scan, whenever a
 *   selector has one: each selector is indexed under one required `label=value` set or one
 *   required label (the one with the fewest items when it was added), and selectors with no
 *   restriction go to a small "always evaluate" list. An item update evaluates only the
 *   selectors indexed under its labels plus that list; a selector update evaluates only the
 *   items carrying its indexed label(s) — those with it among their own labels, and the
 *   children of the parents that have it (items are indexed by their own labels only: the
 *   labels every item of a namespace inherits are indexed once, on the parent).
 *
 * Single-threaded; callbacks run synchronously, inside the mutating call.
 */
import { flat } from '../runtime/flat-string.ts';
import { sameList } from '../runtime/same-list.ts';
import { SetMap } from '../runtime/set-map.ts';
import type { Selector } from '../selector/index.ts';

export type Labels = Readonly<Record<string, string>>;

/** `data`: what the item was last given with (see {@link LabelInheritIndex.updateItem}). */
export interface MatchCallbacks<D = undefined> {
  onMatchStarted(selectorId: string, itemId: string, data: D | undefined): void;
  onMatchStopped(selectorId: string, itemId: string, data: D | undefined): void;
}

interface Item<D> {
  own: Labels;
  parents: readonly string[];
  merged: Labels;
  /** Selector ids matching this item; undefined when none (see {@link Matches}). */
  matches: Matches | undefined;
  /** The caller's data for the item (the IP-set member index's addresses): one map, not two. */
  data: D | undefined;
}

/**
 * An item's matching selector ids: an exact-sized array up to {@link MATCHES_AS_ARRAY} ids, a
 * Set beyond. Nearly every item matches a handful of selectors, and a Set's hash table is
 * ~130 bytes where an array of three ids is ~36 (13 MB at 100k endpoints); the few items that
 * match many (a local endpoint under hundreds of policies) keep the Set's constant lookups.
 * Arrays are replaced, never grown in place: `push` would give them 17 slots.
 */
type Matches = readonly string[] | Set<string>;
const MATCHES_AS_ARRAY = 16;

/** Where a selector is filed in the selector index. */
type Slot =
  | { readonly kind: 'values'; readonly label: string; readonly values: readonly string[] }
  | { readonly kind: 'label'; readonly label: string }
  | { readonly kind: 'always' }
  | { readonly kind: 'never' };

interface SelectorEntry {
  readonly selector: Selector;
  readonly text: string;
  readonly slot: Slot;
  readonly matches: Set<string>;
}

const EMPTY: Labels = Object.freeze({});
/** Up to this many slot labels, a reevaluation looks them up in the item (see #reevaluateItem). */
const FEW_SLOT_LABELS = 8;
const hasOwn = Object.prototype.hasOwnProperty;

export class LabelInheritIndex<D = undefined> {
  readonly #cb: MatchCallbacks<D>;
  readonly #items = new Map<string, Item<D>>();
  readonly #parents = new Map<string, Labels>();
  readonly #itemsByParent = new SetMap<string, string>();
  readonly #selectors = new Map<string, SelectorEntry>();
  readonly #selByValue = new Map<string, SetMap<string, string>>();
  readonly #selByLabel = new SetMap<string, string>();
  readonly #selAlways = new Set<string>();
  /**
   * Items by their OWN labels, for the label keys some selector has been filed under
   * (`#indexedLabels`); what items inherit is found through `#parentsByValue`.
   */
  readonly #itemsByValue = new Map<string, SetMap<string, string>>();
  /**
   * Label keys `#itemsByValue` covers. A key joins when a selector first needs it (one scan of
   * the items) and stays: labels no selector names (`pod-template-hash`,
   * `controller-revision-hash`, …) cost nothing per item.
   */
  readonly #indexedLabels = new Set<string>();
  /** Parents by their labels: their children are candidates for a selector on those labels. */
  readonly #parentsByValue = new Map<string, SetMap<string, string>>();
  /**
   * The last merge of each own-labels object: items with equal labels share one interned
   * own map (update-processor.ts), and with the same parents one merged map too. Replaced
   * whenever a parent's labels change.
   */
  #merges = new WeakMap<Labels, { readonly parents: readonly string[]; readonly merged: Labels }>();
  /** Evaluations performed (for metrics and tests that pin the indexing). */
  evaluations = 0;

  constructor(callbacks: MatchCallbacks<D>) {
    this.#cb = callbacks;
  }

  get itemCount(): number {
    return this.#items.size;
  }

  get selectorCount(): number {
    return this.#selectors.size;
  }

  /** The data `itemId` was last updated with. */
  dataOf(itemId: string): D | undefined {
    return this.#items.get(itemId)?.data;
  }

  /** Selector ids currently matching `itemId`. */
  matchesOfItem(itemId: string): Iterable<string> {
    return this.#items.get(itemId)?.matches ?? [];
  }

  /** Item ids currently matching `selectorId`. */
  matchesOfSelector(selectorId: string): ReadonlySet<string> {
    return this.#selectors.get(selectorId)?.matches ?? new Set();
  }

  // ---- items ------------------------------------------------------------------------------

  /**
   * Adds or updates an item. `data` is held with it (replacing what it held) and handed to the
   * callbacks its matches cause, from then until it is deleted.
   */
  updateItem(itemId: string, labels: Labels, parents: readonly string[], data?: D): void {
    const old = this.#items.get(itemId);
    // An update that keeps the parents (nearly all) leaves their member sets alone.
    if (old === undefined || !sameList(old.parents, parents)) {
      if (old !== undefined) for (const p of old.parents) this.#itemsByParent.delete(p, itemId);
      for (const p of parents) this.#itemsByParent.add(p, itemId);
    }
    const merged = this.#merge(labels, parents);
    if (old === undefined) {
      const item: Item<D> = { own: labels, parents, merged, matches: undefined, data };
      this.#items.set(itemId, item);
      this.#indexItemLabels(itemId, labels);
      this.#reevaluateItem(itemId, item);
      return;
    }
    if (old.own !== labels) this.#reindexItemLabels(itemId, old.own, labels);
    old.own = labels;
    old.parents = parents;
    old.data = data;
    this.#setMerged(itemId, old, merged);
  }

  deleteItem(itemId: string): void {
    const item = this.#items.get(itemId);
    if (item === undefined) return;
    for (const p of item.parents) this.#itemsByParent.delete(p, itemId);
    this.#unindexItemLabels(itemId, item.own);
    this.#items.delete(itemId);
    if (item.matches !== undefined) {
      for (const selId of item.matches) {
        this.#selectors.get(selId)?.matches.delete(itemId);
        this.#cb.onMatchStopped(selId, itemId, item.data);
      }
    }
  }

  /** Sets (or, with `undefined`, removes) a parent's labels. */
  updateParent(name: string, labels: Labels | undefined): void {
    const old = this.#parents.get(name);
    if (labels === undefined || Object.keys(labels).length === 0) {
      if (old === undefined) return;
      this.#parents.delete(name);
      this.#unindexLabels(this.#parentsByValue, name, old);
    } else {
      if (old !== undefined && shallowEqual(old, labels)) return;
      this.#parents.set(name, labels);
      if (old !== undefined) this.#unindexLabels(this.#parentsByValue, name, old);
      this.#indexLabels(this.#parentsByValue, name, labels);
    }
    this.#merges = new WeakMap();
    const children = this.#itemsByParent.get(name);
    if (children === undefined) return;
    for (const itemId of [...children]) {
      const item = this.#items.get(itemId);
      if (item !== undefined) this.#setMerged(itemId, item, this.#merge(item.own, item.parents));
    }
  }

  #merge(own: Labels, parents: readonly string[]): Labels {
    let any = false;
    for (const p of parents) if (this.#parents.has(p)) any = true;
    if (!any) return own;
    const last = this.#merges.get(own);
    if (last !== undefined && sameList(last.parents, parents)) return last.merged;
    const merged: Record<string, string> = {};
    for (let i = parents.length - 1; i >= 0; i--) {
      const pl = this.#parents.get(parents[i] as string);
      if (pl !== undefined) Object.assign(merged, pl);
    }
    Object.assign(merged, own);
    this.#merges.set(own, { parents, merged });
    return merged;
  }

  #setMerged(itemId: string, item: Item<D>, merged: Labels): void {
    if (shallowEqual(item.merged, merged)) {
      item.merged = merged;
      return;
    }
    item.merged = merged;
    this.#reevaluateItem(itemId, item);
  }

  /**
   * Moves the item between value sets only for the labels that changed: a relabel touches one
   * or two small sets, not the sets of the labels every item shares (`pod-template-hash`,
   * the namespace), whose delete-then-add churn made V8 rehash tables of every item.
   */
  #reindexItemLabels(itemId: string, old: Labels, next: Labels): void {
    const indexed = this.#indexedLabels;
    for (const k in old) {
      if (!hasOwn.call(old, k) || !indexed.has(k) || (hasOwn.call(next, k) && next[k] === old[k])) continue;
      this.#unfile(this.#itemsByValue, itemId, k, old[k] as string);
    }
    for (const k in next) {
      if (!hasOwn.call(next, k) || !indexed.has(k) || (hasOwn.call(old, k) && old[k] === next[k])) continue;
      this.#file(this.#itemsByValue, itemId, k, next[k] as string);
    }
  }

  #indexItemLabels(itemId: string, labels: Labels): void {
    this.#indexLabels(this.#itemsByValue, itemId, labels, this.#indexedLabels);
  }

  #unindexItemLabels(itemId: string, labels: Labels): void {
    this.#unindexLabels(this.#itemsByValue, itemId, labels, this.#indexedLabels);
  }

  /** Files the items under `label` the first time a selector needs it. */
  #ensureIndexed(label: string): void {
    if (this.#indexedLabels.has(label)) return;
    this.#indexedLabels.add(label);
    let byValue: SetMap<string, string> | undefined;
    for (const [itemId, item] of this.#items) {
      if (!hasOwn.call(item.own, label)) continue;
      if (byValue === undefined) this.#itemsByValue.set(label, (byValue = new SetMap()));
      byValue.add(item.own[label] as string, itemId);
    }
  }

  /** `only`: index just these keys. */
  #indexLabels(index: Map<string, SetMap<string, string>>, id: string, labels: Labels, only?: ReadonlySet<string>): void {
    for (const k in labels) {
      if (!hasOwn.call(labels, k) || (only !== undefined && !only.has(k))) continue;
      this.#file(index, id, k, labels[k] as string);
    }
  }

  #unindexLabels(index: Map<string, SetMap<string, string>>, id: string, labels: Labels, only?: ReadonlySet<string>): void {
    for (const k in labels) {
      if (!hasOwn.call(labels, k) || (only !== undefined && !only.has(k))) continue;
      this.#unfile(index, id, k, labels[k] as string);
    }
  }

  /** Files `id` under label `k` = `v` in a label → value → ids index (items, parents or selectors). */
  #file(index: Map<string, SetMap<string, string>>, id: string, k: string, v: string): void {
    let byValue = index.get(k);
    if (byValue === undefined) index.set(k, (byValue = new SetMap()));
    byValue.add(v, id);
  }

  /** Undoes `#file`; a label left with no values leaves the index. */
  #unfile(index: Map<string, SetMap<string, string>>, id: string, k: string, v: string): void {
    const byValue = index.get(k);
    if (byValue === undefined) return;
    byValue.delete(v, id);
    if (byValue.size === 0) index.delete(k);
  }

  #reevaluateItem(itemId: string, item: Item<D>): void {
    const labels = item.merged;
    const old = item.matches;
    // Each selector is filed under exactly one slot, and an item has one value per label, so
    // a selector comes up at most once here: no de-duplication needed.
    let matched: string[] | undefined;
    const consider = (selIds: ReadonlySet<string>): void => {
      for (const selId of selIds) {
        const entry = this.#selectors.get(selId);
        if (entry === undefined) continue;
        this.evaluations++;
        if (!entry.selector.evaluate(labels)) continue;
        (matched ??= []).push(selId);
        if (old === undefined || !hasMatch(old, selId)) {
          entry.matches.add(itemId);
          this.#cb.onMatchStarted(selId, itemId, item.data);
        }
      }
    };
    if (this.#selAlways.size > 0) consider(this.#selAlways);
    if (this.#selByLabel.size + this.#selByValue.size <= FEW_SLOT_LABELS) {
      // Few labels have selectors filed under them (`app`, the namespace): look those up in
      // the item rather than every label of the item in the slots.
      for (const [k, ids] of this.#selByLabel) if (hasOwn.call(labels, k)) consider(ids);
      for (const [k, byValue] of this.#selByValue) {
        if (!hasOwn.call(labels, k)) continue;
        const ids = byValue.get(labels[k] as string);
        if (ids !== undefined) consider(ids);
      }
    } else {
      for (const k in labels) {
        if (!hasOwn.call(labels, k)) continue;
        const byLabel = this.#selByLabel.get(k);
        if (byLabel !== undefined) consider(byLabel);
        const byValue = this.#selByValue.get(k)?.get(labels[k] as string);
        if (byValue !== undefined) consider(byValue);
      }
    }
    if (old === undefined) {
      if (matched !== undefined) item.matches = toMatches(matched);
      return;
    }
    // The item keeps its old matches' order, then the new ones (as a Set updated in place would).
    // (An endpoint matching many policies' selectors gets a set to look them up in.)
    const matchedSet = matched !== undefined && matched.length > MATCHES_AS_ARRAY ? new Set(matched) : undefined;
    let next: string[] | undefined;
    let changed = false;
    for (const selId of old) {
      if (matchedSet !== undefined ? matchedSet.has(selId) : matched?.includes(selId)) {
        (next ??= []).push(selId);
        continue;
      }
      changed = true;
      this.#selectors.get(selId)?.matches.delete(itemId);
      this.#cb.onMatchStopped(selId, itemId, item.data);
    }
    if (matched !== undefined) {
      for (const selId of matched) {
        if (hasMatch(old, selId)) continue;
        changed = true;
        (next ??= []).push(selId);
      }
    }
    if (changed) item.matches = next === undefined ? undefined : toMatches(next);
  }

  // ---- selectors --------------------------------------------------------------------------

  updateSelector(selectorId: string, selector: Selector): void {
    // Held for as long as the selector: flat, not the rope its printer builds.
    const text = flat(selector.toString());
    const old = this.#selectors.get(selectorId);
    if (old !== undefined && old.text === text) return;
    if (old !== undefined) this.#unindexSelector(selectorId, old.slot);
    const slot = this.#chooseSlot(selector);
    const entry: SelectorEntry = { selector, text, slot, matches: new Set() };
    this.#selectors.set(selectorId, entry);
    this.#indexSelector(selectorId, slot);
    const consider = (itemId: string): void => {
      if (entry.matches.has(itemId)) return;
      const item = this.#items.get(itemId);
      if (item === undefined) return;
      this.evaluations++;
      if (!selector.evaluate(item.merged)) return;
      entry.matches.add(itemId);
      if (old === undefined || !old.matches.has(itemId)) {
        item.matches = addMatch(item.matches, selectorId);
        this.#cb.onMatchStarted(selectorId, itemId, item.data);
      }
    };
    switch (slot.kind) {
      case 'values':
        this.#forEachCandidate(slot.label, slot.values, consider);
        break;
      case 'label':
        this.#forEachCandidate(slot.label, undefined, consider);
        break;
      case 'always':
        for (const itemId of this.#items.keys()) consider(itemId);
        break;
      case 'never':
        break;
    }
    if (old !== undefined) {
      for (const itemId of old.matches) {
        if (entry.matches.has(itemId)) continue;
        const item = this.#items.get(itemId);
        if (item !== undefined) item.matches = removeMatch(item.matches, selectorId);
        this.#cb.onMatchStopped(selectorId, itemId, item?.data);
      }
    }
  }

  deleteSelector(selectorId: string): void {
    const entry = this.#selectors.get(selectorId);
    if (entry === undefined) return;
    this.#unindexSelector(selectorId, entry.slot);
    this.#selectors.delete(selectorId);
    for (const itemId of entry.matches) {
      const item = this.#items.get(itemId);
      if (item !== undefined) item.matches = removeMatch(item.matches, selectorId);
      this.#cb.onMatchStopped(selectorId, itemId, item?.data);
    }
  }

  /**
   * Calls `fn` with every item whose effective labels may have `label` (with one of `values`,
   * when given): those with it among their own labels, and the children of parents that have
   * it (an own label may override the inherited one; the caller evaluates). An item may come
   * up twice.
   */
  #forEachCandidate(label: string, values: readonly string[] | undefined, fn: (itemId: string) => void): void {
    this.#ensureIndexed(label);
    const visit = (byValue: SetMap<string, string> | undefined, each: (id: string) => void): void => {
      if (byValue === undefined) return;
      if (values === undefined) {
        for (const ids of byValue.values()) for (const id of ids) each(id);
        return;
      }
      for (const v of values) {
        const ids = byValue.get(v);
        if (ids !== undefined) for (const id of ids) each(id);
      }
    };
    visit(this.#itemsByValue.get(label), fn);
    visit(this.#parentsByValue.get(label), (parent) => {
      const children = this.#itemsByParent.get(parent);
      if (children !== undefined) for (const id of children) fn(id);
    });
  }

  /** How many candidates `#forEachCandidate` would give (the slot's cost). */
  #candidateCount(label: string, values: readonly string[] | undefined): number {
    this.#ensureIndexed(label);
    const sets = (byValue: SetMap<string, string> | undefined): Iterable<ReadonlySet<string>> =>
      byValue === undefined ? [] : values === undefined ? byValue.values() : values.flatMap((v) => byValue.get(v) ?? []);
    let n = 0;
    for (const ids of sets(this.#itemsByValue.get(label))) n += ids.size;
    for (const parents of sets(this.#parentsByValue.get(label))) {
      for (const parent of parents) n += this.#itemsByParent.get(parent)?.size ?? 0;
    }
    return n;
  }

  /** Picks the cheapest required label (value set) to file the selector under. */
  #chooseSlot(selector: Selector): Slot {
    // labelRestrictions() is cached process-wide for the last selector only: copy now.
    const restrictions = selector.labelRestrictions();
    let best: Slot = { kind: 'always' };
    let bestCost = Number.POSITIVE_INFINITY;
    for (const [label, r] of restrictions) {
      if (r.mustBePresent && r.mustBeAbsent) return { kind: 'never' };
      if (r.mustHaveOneOfValues !== undefined) {
        if (r.mustHaveOneOfValues.size === 0) return { kind: 'never' };
        const cost = this.#candidateCount(label, [...r.mustHaveOneOfValues]);
        if (cost < bestCost || best.kind !== 'values') {
          if (best.kind !== 'values' || cost < bestCost) {
            best = { kind: 'values', label, values: [...r.mustHaveOneOfValues] };
            bestCost = cost;
          }
        }
      } else if (r.mustBePresent && best.kind !== 'values') {
        const cost = this.#candidateCount(label, undefined);
        if (cost < bestCost) {
          best = { kind: 'label', label };
          bestCost = cost;
        }
      }
    }
    return best;
  }

  #indexSelector(selectorId: string, slot: Slot): void {
    switch (slot.kind) {
      case 'values':
        for (const v of slot.values) this.#file(this.#selByValue, selectorId, slot.label, v);
        break;
      case 'label':
        this.#selByLabel.add(slot.label, selectorId);
        break;
      case 'always':
        this.#selAlways.add(selectorId);
        break;
      case 'never':
        break;
    }
  }

  #unindexSelector(selectorId: string, slot: Slot): void {
    switch (slot.kind) {
      case 'values':
        for (const v of slot.values) this.#unfile(this.#selByValue, selectorId, slot.label, v);
        break;
      case 'label':
        this.#selByLabel.delete(slot.label, selectorId);
        break;
      case 'always':
        this.#selAlways.delete(selectorId);
        break;
      case 'never':
        break;
    }
  }
}

function hasMatch(m: Matches, selId: string): boolean {
  return Array.isArray(m) ? m.includes(selId) : (m as Set<string>).has(selId);
}

/** `ids` (a fresh array) as an item's matches: trimmed to its length, or a Set when many. */
function toMatches(ids: string[]): Matches {
  return ids.length > MATCHES_AS_ARRAY ? new Set(ids) : ids.slice();
}

function addMatch(m: Matches | undefined, selId: string): Matches {
  if (m === undefined) return [selId];
  if (!Array.isArray(m)) return (m as Set<string>).add(selId);
  if (m.includes(selId)) return m;
  // concat allocates exactly; a spread would give the array 20 slots.
  return m.length >= MATCHES_AS_ARRAY ? new Set([...m, selId]) : m.concat(selId);
}

/** `m` without `selId`; undefined when none are left. */
function removeMatch(m: Matches | undefined, selId: string): Matches | undefined {
  if (m === undefined) return undefined;
  if (!Array.isArray(m)) {
    const set = m as Set<string>;
    set.delete(selId);
    return set.size === 0 ? undefined : set;
  }
  if (!m.includes(selId)) return m;
  if (m.length === 1) return undefined;
  const i = m.indexOf(selId);
  return m.slice(0, i).concat(m.slice(i + 1));
}

function shallowEqual(a: Labels, b: Labels): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    if (!hasOwn.call(a, k)) continue;
    n++;
    if (!hasOwn.call(b, k) || a[k] !== b[k]) return false;
  }
  for (const k in b) if (hasOwn.call(b, k)) n--;
  return n === 0;
}

export { EMPTY as EMPTY_LABELS };
