/**
 * An immutable sorted map from string keys to values: a copy-on-write B+tree, the structure
 * Typha's snapshot cache keeps its state in (typha.md §1.1). It exists so that each breadcrumb can hold the whole state as of that crumb at
 * O(1) cost — a crumb's snapshot is simply the map value at the time it was published — while
 * an update costs O(log n) copied nodes instead of a copy of the whole state.
 *
 * Guarantees:
 * - a `PersistentMap` never changes: `set`/`delete` return a new map sharing every node off
 *   the edited path with the old one;
 * - iteration (`keys`, `values`, `entries`, `forEach`) is in ascending key order (JavaScript
 *   string order, i.e. UTF-16 code units);
 * - `withMutations` applies many edits copying each touched node at most once: nodes are
 *   tagged with the owner token of the edit that created them, and only nodes carrying the
 *   current edit's token are changed in place. The token is dropped when the edit ends, so
 *   every node of a returned map is frozen from then on. The edit cannot see or disturb any
 *   other map value: a node reached from a map that existed before the edit is never owned.
 *
 * Shape invariants (checked by `checkInvariants`, used by the tests): all leaves at one depth;
 * every node but the root holds between MIN_ENTRIES and MAX_ENTRIES entries; a branch's
 * `keys[i]` is the smallest key under `kids[i]`.
 *
 * Why our own and not the `immutable` package: measured 2026-11-25 on the 2-core build box
 * (Node 20, load average ~6 from concurrent test runs, so best of 5 runs per figure), 100,000
 * flat string keys of the snapshot's form `WorkloadEndpoint/ns-<i%1000>/wep-<i>` in shuffled
 * order, values one shared object; batches are 100 scattered keys per `withMutations`, as the
 * cache applies them:
 *
 * | 100,000 keys                              | PersistentMap (B+tree, 32) | immutable 5.2.1 `Map` |
 * |-------------------------------------------|----------------------------|-----------------------|
 * | insert, batches of 100 / one at a time    | 724k/s / 432k/s            | 649k/s / 455k/s       |
 * | update, batches of 100 / one at a time    | 838k/s / 544k/s            | 493k/s / 476k/s       |
 * | delete, batches of 100 / one at a time    | 903k/s / 963k/s            | 826k/s / 624k/s       |
 * | get                                       | 1.94M/s                    | 1.52M/s               |
 * | heap of the 100,000-entry map             | 4.2 MB                     | 14.2 MB               |
 * | 1,000 retained versions, 100 updates each | +48 MB                     | +34 MB                |
 * | every entry in key order                  | 0.8 ms (forEach)           | 120 ms (sort a Seq)   |
 *
 * Throughput is a draw (the noise between runs is ±30 %); the map itself is 3.4× smaller. The
 * deciding row is the last: `immutable`'s `Map` is a hash trie that iterates in hash order, so
 * every snapshot sent to a new client would first have to be sorted (its `OrderedMap` keeps
 * insertion order, not key order). Retained versions cost more here because a B+tree path copy
 * copies 32-wide leaves with their keys; that is the price of ordered leaves, paid only while
 * a slow client pins old crumbs (at most 300 s of them, typha.md §3).
 * `npm run bench -- typha map` re-measures this map's column; the `immutable` column came from
 * a throwaway script (the package is not a dependency).
 */

/** Entries per node at most; a node that grows past it splits in two. */
const MAX_ENTRIES = 32;
/** Entries per non-root node at least; a node that shrinks below it borrows or merges. */
const MIN_ENTRIES = MAX_ENTRIES >> 1;

/** Marks the nodes one `withMutations` edit created (and so may change in place). */
type Owner = object;

/**
 * One node. A leaf has `vals` (parallel to `keys`) and no `kids`; a branch has `kids` and
 * no `vals`. One class for both keeps property access monomorphic.
 */
class BNode<V> {
  constructor(
    public owner: Owner | undefined,
    public keys: string[],
    public vals: V[] | undefined,
    public kids: BNode<V>[] | undefined,
  ) {}
}

/** Index of `key` in sorted `keys`, or `~insertionPoint` when absent. */
function search(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid] as string;
    if (k < key) lo = mid + 1;
    else if (k > key) hi = mid - 1;
    else return mid;
  }
  return ~lo;
}

/** The child of a branch whose range holds `key`: the last one whose smallest key is ≤ key. */
function childIndex(keys: readonly string[], key: string): number {
  const i = search(keys, key);
  return i >= 0 ? i : Math.max(0, ~i - 1);
}

function editable<V>(n: BNode<V>, owner: Owner | undefined): BNode<V> {
  if (owner !== undefined && n.owner === owner) return n;
  return new BNode(owner, n.keys.slice(), n.vals?.slice(), n.kids?.slice());
}

/** What one edit did, passed down the recursion (one allocation per edit, not per level). */
interface EditState<V> {
  owner: Owner | undefined;
  /** Anything changed (a value replaced, a key added or removed). */
  changed: boolean;
  /** The size changed by this much. */
  delta: number;
  /** The right half of a node that split, for the parent to adopt. */
  split: BNode<V> | undefined;
}

function splitOff<V>(n: BNode<V>, owner: Owner | undefined): BNode<V> {
  const half = n.keys.length >> 1;
  return new BNode(owner, n.keys.splice(half), n.vals?.splice(half), n.kids?.splice(half));
}

function setIn<V>(node: BNode<V>, key: string, val: V, st: EditState<V>): BNode<V> {
  if (node.kids === undefined) {
    const i = search(node.keys, key);
    if (i >= 0) {
      if ((node.vals as V[])[i] === val) return node;
      const n = editable(node, st.owner);
      (n.vals as V[])[i] = val;
      st.changed = true;
      return n;
    }
    const n = editable(node, st.owner);
    n.keys.splice(~i, 0, key);
    (n.vals as V[]).splice(~i, 0, val);
    st.changed = true;
    st.delta = 1;
    if (n.keys.length > MAX_ENTRIES) st.split = splitOff(n, st.owner);
    return n;
  }
  const ci = childIndex(node.keys, key);
  const child = node.kids[ci] as BNode<V>;
  const newChild = setIn(child, key, val, st);
  if (!st.changed) return node;
  const n = editable(node, st.owner);
  const kids = n.kids as BNode<V>[];
  kids[ci] = newChild;
  n.keys[ci] = newChild.keys[0] as string;
  const split = st.split;
  if (split !== undefined) {
    st.split = undefined;
    kids.splice(ci + 1, 0, split);
    n.keys.splice(ci + 1, 0, split.keys[0] as string);
    if (kids.length > MAX_ENTRIES) st.split = splitOff(n, st.owner);
  }
  return n;
}

/** Rebalances `n.kids[ci]`, which fell below MIN_ENTRIES, with a neighbour: merge or share. */
function rebalance<V>(n: BNode<V>, ci: number, owner: Owner | undefined): void {
  const kids = n.kids as BNode<V>[];
  const li = ci > 0 ? ci - 1 : ci;
  const left = kids[li] as BNode<V>;
  const right = kids[li + 1] as BNode<V>;
  const keys = left.keys.concat(right.keys);
  const vals = left.vals === undefined ? undefined : left.vals.concat(right.vals as V[]);
  const children = left.kids === undefined ? undefined : left.kids.concat(right.kids as BNode<V>[]);
  if (keys.length <= MAX_ENTRIES) {
    const merged = new BNode(owner, keys, vals, children);
    kids.splice(li, 2, merged);
    n.keys.splice(li, 2, keys[0] as string);
    return;
  }
  const half = keys.length >> 1;
  const a = new BNode(owner, keys.slice(0, half), vals?.slice(0, half), children?.slice(0, half));
  const b = new BNode(owner, keys.slice(half), vals?.slice(half), children?.slice(half));
  kids[li] = a;
  kids[li + 1] = b;
  n.keys[li] = a.keys[0] as string;
  n.keys[li + 1] = b.keys[0] as string;
}

function deleteIn<V>(node: BNode<V>, key: string, st: EditState<V>): BNode<V> {
  if (node.kids === undefined) {
    const i = search(node.keys, key);
    if (i < 0) return node;
    const n = editable(node, st.owner);
    n.keys.splice(i, 1);
    (n.vals as V[]).splice(i, 1);
    st.changed = true;
    st.delta = -1;
    return n;
  }
  const ci = childIndex(node.keys, key);
  const newChild = deleteIn(node.kids[ci] as BNode<V>, key, st);
  if (!st.changed) return node;
  const n = editable(node, st.owner);
  (n.kids as BNode<V>[])[ci] = newChild;
  if (newChild.keys.length < MIN_ENTRIES && (n.kids as BNode<V>[]).length > 1) rebalance(n, ci, st.owner);
  else n.keys[ci] = newChild.keys[0] as string;
  return n;
}

function getIn<V>(node: BNode<V>, key: string): V | undefined {
  let n = node;
  while (n.kids !== undefined) n = n.kids[childIndex(n.keys, key)] as BNode<V>;
  const i = search(n.keys, key);
  return i >= 0 ? (n.vals as V[])[i] : undefined;
}

/**
 * Applies one set (`del` false) or delete to a root, returning the new root: a split grows
 * the tree by a level, a branch left with one child shrinks it.
 */
function editRoot<V>(root: BNode<V>, st: EditState<V>, key: string, value: V | undefined, del: boolean): BNode<V> {
  let r = del ? deleteIn(root, key, st) : setIn(root, key, value as V, st);
  if (st.split !== undefined) {
    r = new BNode(st.owner, [r.keys[0] as string, st.split.keys[0] as string], undefined, [r, st.split]);
    st.split = undefined;
  }
  while (r.kids !== undefined && r.kids.length === 1) r = r.kids[0] as BNode<V>;
  return r;
}

function* walk<V>(n: BNode<V>): Generator<[string, V]> {
  if (n.kids === undefined) {
    const vals = n.vals as V[];
    for (let i = 0; i < n.keys.length; i++) yield [n.keys[i] as string, vals[i] as V];
    return;
  }
  for (const kid of n.kids) yield* walk(kid);
}

function forEachIn<V>(n: BNode<V>, fn: (value: V, key: string) => void): void {
  if (n.kids === undefined) {
    const vals = n.vals as V[];
    for (let i = 0; i < n.keys.length; i++) fn(vals[i] as V, n.keys[i] as string);
    return;
  }
  for (const kid of n.kids) forEachIn(kid, fn);
}

/** The edit handle `withMutations` passes: changes apply to the map under construction. */
export interface MapEditor<V> {
  readonly size: number;
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  /** Returns whether the key was present. */
  delete(key: string): boolean;
}

/** Thrown by a `MapEditor` used after its `withMutations` returned. */
export class EditorClosedError extends Error {
  constructor() {
    super('PersistentMap: a withMutations editor was used after withMutations returned');
    this.name = 'EditorClosedError';
  }
}

/**
 * The editor of one `withMutations` call. A class rather than closures: the edit loop of a
 * batch must not allocate per call (tsx and the build's keepNames wrap every closure).
 */
class Editor<V> implements MapEditor<V> {
  readonly #st: EditState<V> = { owner: {}, changed: false, delta: 0, split: undefined };
  changed = false;

  constructor(
    public root: BNode<V>,
    public size: number,
  ) {}

  get(key: string): V | undefined {
    return getIn(this.root, key);
  }

  set(key: string, value: V): void {
    this.#apply(key, value, false);
  }

  delete(key: string): boolean {
    return this.#apply(key, undefined, true) !== 0;
  }

  /** Drops the owner token: every node this edit created is frozen from now on. */
  close(): void {
    this.#st.owner = undefined;
  }

  #apply(key: string, value: V | undefined, del: boolean): number {
    const st = this.#st;
    if (st.owner === undefined) throw new EditorClosedError();
    st.changed = false;
    st.delta = 0;
    this.root = editRoot(this.root, st, key, value, del);
    this.size += st.delta;
    if (st.changed) this.changed = true;
    return st.delta;
  }
}

export class PersistentMap<V> {
  static #empty = new PersistentMap<never>(new BNode<never>(undefined, [], [], undefined), 0);

  readonly #root: BNode<V>;
  readonly size: number;

  private constructor(root: BNode<V>, size: number) {
    this.#root = root;
    this.size = size;
  }

  static empty<V>(): PersistentMap<V> {
    return PersistentMap.#empty as PersistentMap<V>;
  }

  /** A map of `entries` (later duplicates win). */
  static of<V>(entries: Iterable<readonly [string, V]>): PersistentMap<V> {
    return PersistentMap.empty<V>().withMutations((m) => {
      for (const [k, v] of entries) m.set(k, v);
    });
  }

  get(key: string): V | undefined {
    return getIn(this.#root, key);
  }

  has(key: string): boolean {
    return search(this.#leafFor(key).keys, key) >= 0;
  }

  /** This map with `key` → `value`; `this` itself when the key already maps to that very value. */
  set(key: string, value: V): PersistentMap<V> {
    const st: EditState<V> = { owner: undefined, changed: false, delta: 0, split: undefined };
    const root = editRoot(this.#root, st, key, value, false);
    return st.changed ? new PersistentMap(root, this.size + st.delta) : this;
  }

  /** This map without `key`; `this` itself when the key is absent. */
  delete(key: string): PersistentMap<V> {
    const st: EditState<V> = { owner: undefined, changed: false, delta: 0, split: undefined };
    const root = editRoot(this.#root, st, key, undefined, true);
    return st.changed ? new PersistentMap(root, this.size + st.delta) : this;
  }

  /**
   * Applies `edit`'s changes, copying each node at most once, and returns the result (`this`
   * when nothing changed). The editor must not be used after `edit` returns.
   */
  withMutations(edit: (m: MapEditor<V>) => void): PersistentMap<V> {
    const editor = new Editor(this.#root, this.size);
    edit(editor);
    editor.close();
    return editor.changed ? new PersistentMap(editor.root, editor.size) : this;
  }

  keys(): IterableIterator<string> {
    return (function* (g) {
      for (const [k] of g) yield k;
    })(walk(this.#root));
  }

  values(): IterableIterator<V> {
    return (function* (g) {
      for (const [, v] of g) yield v;
    })(walk(this.#root));
  }

  entries(): IterableIterator<[string, V]> {
    return walk(this.#root);
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }

  /** Calls `fn` for every entry in key order; faster than the iterators. */
  forEach(fn: (value: V, key: string) => void): void {
    forEachIn(this.#root, fn);
  }

  /** Throws a `RangeError` describing the first broken shape invariant (tests). */
  checkInvariants(): void {
    let leafDepth = -1;
    let count = 0;
    let last: string | undefined;
    const visit = (n: BNode<V>, depth: number, isRoot: boolean): void => {
      const entries = n.keys.length;
      if (!isRoot && (entries < MIN_ENTRIES || entries > MAX_ENTRIES)) throw new RangeError(`node at depth ${depth} holds ${entries} entries, outside ${MIN_ENTRIES}–${MAX_ENTRIES}`);
      if (n.kids === undefined) {
        if (leafDepth === -1) leafDepth = depth;
        if (depth !== leafDepth) throw new RangeError(`leaf at depth ${depth}, another at ${leafDepth}`);
        if (n.vals?.length !== entries) throw new RangeError(`leaf at depth ${depth}: ${entries} keys but ${n.vals?.length} values`);
        for (const k of n.keys) {
          if (last !== undefined && !(last < k)) throw new RangeError(`keys out of order: ${JSON.stringify(last)} before ${JSON.stringify(k)}`);
          last = k;
          count++;
        }
        return;
      }
      if (n.kids.length !== entries) throw new RangeError(`branch at depth ${depth}: ${entries} keys but ${n.kids.length} children`);
      if (isRoot && n.kids.length < 2) throw new RangeError('the root branch has fewer than 2 children');
      n.kids.forEach((kid, i) => {
        if (kid.keys[0] !== n.keys[i]) throw new RangeError(`branch at depth ${depth}: keys[${i}] ${JSON.stringify(n.keys[i])} is not its child's smallest key ${JSON.stringify(kid.keys[0])}`);
        visit(kid, depth + 1, false);
      });
    };
    visit(this.#root, 0, true);
    if (count !== this.size) throw new RangeError(`size ${this.size} but ${count} entries`);
  }

  #leafFor(key: string): BNode<V> {
    let n = this.#root;
    while (n.kids !== undefined) n = n.kids[childIndex(n.keys, key)] as BNode<V>;
    return n;
  }
}
