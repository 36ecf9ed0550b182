/**
 * ListerWatcher over a directory of YAML/JSON files, so the same informers (and so the same
 * engine) run without a cluster.
 *
 * - Files are read with `readManifests` (directories recursively, multi-document YAML,
 *   lists expanded); `select` picks the objects of this resource (e.g. by apiVersion + kind).
 * - Resource versions are synthetic: one counter per watcher, bumped for every change the
 *   watcher observes; an object's `metadata.resourceVersion` is the counter value at which
 *   it last changed.
 * - Watching reacts to file changes (`fs.watch`, debounced), re-reads the tree and emits
 *   ADDED / MODIFIED / DELETED for what changed. A watch from a resourceVersion older than
 *   the retained history fails with 410, as the API server's would, and the Reflector
 *   relists.
 * - A path or file that cannot be read, or a document that does not parse, is reported
 *   through `onError` as an `InputError` with a `FileProblem` (file, and the line and
 *   column of a syntax error); a selected object without a name, as one with an
 *   `ObjectProblem`. The file's previous objects are kept, so a half-saved edit never
 *   deletes policy. One-shot readers (the user tools) collect these and refuse to answer;
 *   long-running ones log them and keep serving the last good state.
 */
import { watch as fsWatch } from 'node:fs';
import { fileProblem, InputError } from '../runtime/input-error.ts';
import { describeManifestSource, isManifestProblem, readManifests, type ManifestSource } from '../runtime/manifest-files.ts';
import type { ListOptions, ListResult, ListerWatcher, WatchEvent, WatchOptions } from './lister-watcher.ts';
import { StatusError } from './lister-watcher.ts';
import { KeyError, metaNamespaceKey, type KubeObject } from './object.ts';

/** An object as read, with where it was read (for problems that name it). */
interface ReadObject {
  readonly raw: KubeObject;
  readonly source: ManifestSource;
}

export interface FileListerWatcherOptions<T extends KubeObject> {
  /** Directories or files to read. */
  paths: readonly string[];
  /** Picks the objects of this resource. */
  select: (obj: KubeObject) => obj is T;
  /** Name for logs and metrics. */
  resource: string;
  /** Called for unreadable or unparseable files and unkeyable objects, on every read. @default ignore */
  onError?: (err: InputError) => void;
  /** Quiet time after a change before re-reading. @default 50 */
  debounceMs?: number;
  /** Events kept for watches that resume from an older resourceVersion. @default 10_000 */
  historyLimit?: number;
}

export class FileListerWatcher<T extends KubeObject> implements ListerWatcher<T> {
  readonly resource: string;
  private readonly paths: readonly string[];
  private readonly select: (obj: KubeObject) => obj is T;
  private readonly onError: (err: InputError) => void;
  private readonly debounceMs: number;
  private readonly historyLimit: number;

  private rv = 0;
  /** key → [stable JSON without resourceVersion, object with synthetic RV] */
  private current = new Map<string, { json: string; obj: T }>();
  /** Objects per file from the last successful read of that file. */
  private lastGoodByFile = new Map<string, ReadObject[]>();
  private history: Array<WatchEvent<T> & { rv: number }> = [];
  private loaded = false;
  private rescanChain: Promise<void> = Promise.resolve();

  constructor(opts: FileListerWatcherOptions<T>) {
    const { paths, select, resource, onError = () => undefined, debounceMs = 50, historyLimit = 10_000 } = opts;
    this.paths = paths;
    this.select = select;
    this.resource = resource;
    this.onError = onError;
    this.debounceMs = debounceMs;
    this.historyLimit = historyLimit;
  }

  async list(_opts: ListOptions): Promise<ListResult<T>> {
    if (!this.loaded) await this.rescan();
    return { items: [...this.current.values()].map((e) => e.obj), resourceVersion: String(this.rv) };
  }

  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    return this.stream(opts);
  }

  private async *stream(opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    let from = Number(opts.resourceVersion || '0');
    const oldest = this.history[0]?.rv;
    if (oldest !== undefined && from < oldest - 1) {
      throw new StatusError(410, 'Expired', `too old resource version: ${from} (${oldest - 1})`);
    }
    let wake: (() => void) | undefined;
    let changed = false;
    let timer: NodeJS.Timeout | undefined;
    const watchers = this.paths.map((p) =>
      fsWatch(p, { recursive: true }, () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          changed = true;
          wake?.();
        }, this.debounceMs);
      }),
    );
    const onAbort = (): void => wake?.();
    opts.signal.addEventListener('abort', onAbort);
    try {
      for (;;) {
        for (const ev of this.history) {
          if (ev.rv <= from) continue;
          from = ev.rv;
          yield { type: ev.type, object: ev.object } as WatchEvent<T>;
        }
        if (opts.signal.aborted) return;
        if (changed) {
          changed = false;
          await this.rescan();
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      clearTimeout(timer);
      for (const w of watchers) w.close();
      opts.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Re-reads the files and records what changed. Serialised: one rescan at a time. */
  rescan(): Promise<void> {
    const run = this.rescanChain.then(() => this.doRescan());
    this.rescanChain = run.catch(() => undefined);
    return run;
  }

  private async doRescan(): Promise<void> {
    // Group by file so a file that fails to parse keeps its last good objects.
    const byFile = new Map<string, ReadObject[]>();
    const failed = new Set<string>();
    for (const entry of await readManifests(this.paths)) {
      const file = entry.source.file;
      if (isManifestProblem(entry)) {
        failed.add(file);
        this.onError(new InputError([fileProblem(entry)]));
        continue;
      }
      let objs = byFile.get(file);
      if (objs === undefined) byFile.set(file, (objs = []));
      if (typeof entry.value === 'object' && entry.value !== null) objs.push({ raw: entry.value as KubeObject, source: entry.source });
    }
    for (const file of failed) {
      const previous = this.lastGoodByFile.get(file);
      if (previous !== undefined) byFile.set(file, previous);
    }
    this.lastGoodByFile = byFile;
    const next = new Map<string, { json: string; obj: T }>();
    for (const objs of byFile.values()) {
      for (const { raw, source } of objs) {
        if (!this.select(raw)) continue;
        let key: string;
        try {
          key = metaNamespaceKey(raw);
        } catch (err) {
          if (!(err instanceof KeyError)) throw err;
          const object = `${raw.kind ?? 'object'} ${raw.metadata?.namespace ? `${raw.metadata.namespace}/` : ''}<unnamed>`;
          this.onError(new InputError([{ type: 'object', object, source: describeManifestSource(source), path: 'metadata.name', reason: 'must be a non-empty string' }]));
          continue;
        }
        next.set(key, { json: JSON.stringify(raw), obj: raw });
      }
    }
    for (const [key, entry] of next) {
      const prev = this.current.get(key);
      if (prev !== undefined && prev.json === entry.json) {
        next.set(key, prev);
        continue;
      }
      this.rv++;
      const obj = withResourceVersion(entry.obj, this.rv);
      next.set(key, { json: entry.json, obj });
      if (this.loaded) this.record(prev === undefined ? 'ADDED' : 'MODIFIED', obj);
    }
    for (const [key, prev] of this.current) {
      if (next.has(key)) continue;
      this.rv++;
      if (this.loaded) this.record('DELETED', withResourceVersion(prev.obj, this.rv));
    }
    this.current = next;
    this.loaded = true;
  }

  private record(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void {
    this.history.push({ type, object, rv: this.rv });
    if (this.history.length > this.historyLimit) this.history.splice(0, this.history.length - this.historyLimit);
  }
}

function withResourceVersion<T extends KubeObject>(obj: T, rv: number): T {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}
