/**
 * A ListerWatcher whose every list response and watch event is scripted by the test, so the
 * Reflector's reconnect paths (410 relist, bookmarks, stalls, mid-stream closes, duplicate
 * events) run deterministically.
 *
 * `list()` takes the next queued response (an object list or an error) and waits if none is
 * queued yet. `watch()` opens a `ScriptedWatch` that the test obtains with `nextWatch()` and
 * feeds with `send`, `close` and `fail`.
 */
import type { ListOptions, ListResult, ListerWatcher, WatchEvent, WatchOptions } from '../../src/informers/lister-watcher.ts';
import type { KubeObject } from '../../src/informers/object.ts';

type ListResponse<T> = ListResult<T> | Error;

export class ScriptedWatch<T extends KubeObject> {
  private events: Array<WatchEvent<T> | Error | 'close'> = [];
  private head = 0;
  private wake: (() => void) | undefined;
  /** Whether the consumer stopped (aborted or finished). */
  ended = false;

  constructor(readonly options: WatchOptions) {}

  send(...events: WatchEvent<T>[]): void {
    this.events.push(...events);
    this.notify();
  }

  /** Ends the stream cleanly, as when the server's timeoutSeconds elapses. */
  close(): void {
    this.events.push('close');
    this.notify();
  }

  /** Ends the stream with an error (network error, or a StatusError). */
  fail(err: Error): void {
    this.events.push(err);
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async *iterate(): AsyncGenerator<WatchEvent<T>> {
    const signal = this.options.signal;
    const onAbort = (): void => this.notify();
    signal.addEventListener('abort', onAbort);
    try {
      for (;;) {
        if (signal.aborted) return;
        const next = this.events[this.head];
        if (next !== undefined) {
          this.events[this.head++] = undefined as unknown as WatchEvent<T>;
          if (this.head === this.events.length) {
            this.events = [];
            this.head = 0;
          }
        }
        if (next === undefined) {
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        if (next === 'close') return;
        if (next instanceof Error) throw next;
        yield next;
      }
    } finally {
      this.ended = true;
      signal.removeEventListener('abort', onAbort);
    }
  }
}

export class ScriptedListerWatcher<T extends KubeObject> implements ListerWatcher<T> {
  readonly resource: string;
  /** Every list call's options, in order. */
  readonly listCalls: ListOptions[] = [];
  /** Every watch ever opened, in order. */
  readonly watches: ScriptedWatch<T>[] = [];
  private listResponses: ListResponse<T>[] = [];
  private listWaiters: Array<() => void> = [];
  private watchWaiters: Array<(w: ScriptedWatch<T>) => void> = [];
  private watchesTaken = 0;

  constructor(resource = 'scripted') {
    this.resource = resource;
  }

  /** Queues the response for a future `list()` call. */
  queueList(response: ListResponse<T>): void {
    this.listResponses.push(response);
    for (const w of this.listWaiters.splice(0)) w();
  }

  async list(opts: ListOptions): Promise<ListResult<T>> {
    this.listCalls.push({ ...opts, signal: undefined });
    while (this.listResponses.length === 0) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      await new Promise<void>((resolve) => {
        this.listWaiters.push(resolve);
        opts.signal?.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    const r = this.listResponses.shift()!;
    if (r instanceof Error) throw r;
    return { ...r, items: [...r.items] };
  }

  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    const w = new ScriptedWatch<T>(opts);
    this.watches.push(w);
    const waiter = this.watchWaiters.shift();
    if (waiter !== undefined) {
      this.watchesTaken++;
      waiter(w);
    }
    return w.iterate();
  }

  /** Resolves with the next watch that the consumer opens (or an already opened, untaken one). */
  nextWatch(): Promise<ScriptedWatch<T>> {
    if (this.watchesTaken < this.watches.length) {
      return Promise.resolve(this.watches[this.watchesTaken++]!);
    }
    return new Promise((resolve) => this.watchWaiters.push(resolve));
  }
}

/**
 * One ScriptedListerWatcher per resource, made on first use: `lwFor` is an InformerFactory's
 * `listerWatcherFor`, and the test calls it again to script that resource's lists and watches.
 */
export function scriptedListerWatchers(): (r: { readonly group: string; readonly version?: string; readonly plural: string }) => ScriptedListerWatcher<KubeObject> {
  const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();
  return (r) => {
    const key = `${r.group}/${r.plural}`;
    let lw = lws.get(key);
    if (lw === undefined) {
      lw = new ScriptedListerWatcher<KubeObject>(key);
      lws.set(key, lw);
    }
    return lw;
  };
}
