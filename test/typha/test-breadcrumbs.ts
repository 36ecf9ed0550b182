/**
 * A minimal breadcrumb list for the wire tests, built only from the `Breadcrumb` contract
 * (breadcrumb.ts), so the server is tested independently of the real snapshot cache: the test
 * publishes crumbs explicitly (`publish`), each stamped with the injected clock.
 *
 * Honours the contract's invariants: seq +1 per crumb, immutable crumbs (each changed snapshot
 * is a copy; an unchanged one is the previous object, as with the real cache's persistent map),
 * no-op updates dropped from `deltas`, `next()` resolving at publication.
 */
import type { Clock } from '../../src/runtime/clock.ts';
import type { Breadcrumb, BreadcrumbSource, SnapshotMap } from '../../src/typha/breadcrumb.ts';
import { serializeUpdate, updateKey, wouldBeNoOp, type SerializedUpdate } from '../../src/typha/serialized-update.ts';
import type { SyncStatus, Update } from '../../src/syncer/index.ts';

class MapSnapshot implements SnapshotMap {
  readonly #entries: Map<string, SerializedUpdate>;
  constructor(entries: Map<string, SerializedUpdate>) {
    this.#entries = entries;
  }
  get size(): number {
    return this.#entries.size;
  }
  get(key: string): SerializedUpdate | undefined {
    return this.#entries.get(key);
  }
  values(): Iterable<SerializedUpdate> {
    return [...this.#entries.keys()].sort().map((k) => this.#entries.get(k) as SerializedUpdate);
  }
}

class TestCrumb implements Breadcrumb {
  nextCrumb: TestCrumb | undefined;
  readonly #waiters: Array<(c: Breadcrumb) => void> = [];
  constructor(
    readonly seq: number,
    readonly timestamp: number,
    readonly snapshot: SnapshotMap,
    readonly deltas: readonly SerializedUpdate[],
    readonly syncStatus: SyncStatus,
  ) {}

  get nextIfPublished(): Breadcrumb | undefined {
    return this.nextCrumb;
  }

  next(signal?: AbortSignal): Promise<Breadcrumb> {
    if (this.nextCrumb !== undefined) return Promise.resolve(this.nextCrumb);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = (): void => reject(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push((c) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(c);
      });
    });
  }

  link(next: TestCrumb): void {
    this.nextCrumb = next;
    for (const w of this.#waiters.splice(0)) w(next);
  }
}

export class TestBreadcrumbs implements BreadcrumbSource {
  readonly #clock: Clock;
  readonly #state = new Map<string, SerializedUpdate>();
  #latest: TestCrumb;

  constructor(clock: Clock, initial: readonly SerializedUpdate[] = [], status: SyncStatus = 'in-sync') {
    this.#clock = clock;
    for (const u of initial) this.#state.set(u.key, u);
    this.#latest = new TestCrumb(1, clock.now(), new MapSnapshot(new Map(this.#state)), [...initial], status);
  }

  latest(): Breadcrumb {
    return this.#latest;
  }

  /** Applies `updates` (skipping no-ops) and publishes the next crumb. */
  publish(updates: ReadonlyArray<Update | SerializedUpdate>, status: SyncStatus = this.#latest.syncStatus): Breadcrumb {
    const deltas: SerializedUpdate[] = [];
    for (const u of updates) {
      const s = 'key' in u ? u : serializeUpdate(u, this.#state.get(keyOf(u)));
      if (wouldBeNoOp(this.#state.get(s.key), s)) continue;
      if (s.value === null) this.#state.delete(s.key);
      else this.#state.set(s.key, s);
      deltas.push(s);
    }
    // Like the real cache's persistent map: an unchanged state is the same map object.
    const snapshot = deltas.length === 0 ? this.#latest.snapshot : new MapSnapshot(new Map(this.#state));
    const crumb = new TestCrumb(this.#latest.seq + 1, this.#clock.now(), snapshot, deltas, status);
    this.#latest.link(crumb);
    this.#latest = crumb;
    return crumb;
  }
}

function keyOf(u: Update): string {
  return u.op === 'delete' ? updateKey(u.kind, u.namespace, u.name) : updateKey(u.resource.kind, u.resource.metadata.namespace, u.resource.metadata.name);
}
