/**
 * The source of truth an informer reflects (client-go `ListerWatcher`).
 *
 * Three implementations: `KubeListerWatcher` (the API server, via @kubernetes/client-node as
 * transport), `FileListerWatcher` (a directory of YAML/JSON, for offline use) and
 * `ScriptedListerWatcher` (tests drive every response and event by hand).
 */
import type { KubeObject } from './object.ts';

export interface ListOptions {
  /** "0" = any (cache), "" = most recent (consistent read), else "not older than". */
  resourceVersion?: string;
  /** Page size; the server may ignore it (e.g. when serving from its watch cache). */
  limit?: number;
  continue?: string;
  signal?: AbortSignal;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
  /** Set when more pages follow. */
  continue?: string;
}

export interface WatchOptions {
  resourceVersion: string;
  allowWatchBookmarks: boolean;
  /** Server-side timeout; the server closes the stream cleanly after it. */
  timeoutSeconds: number;
  /** Aborting ends the stream (the iterator returns). */
  signal: AbortSignal;
}

/** A `metav1.Status` as carried by an ERROR watch event or an error response. */
export interface Status {
  kind?: 'Status';
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
}

export type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | { type: 'BOOKMARK'; object: KubeObject }
  | { type: 'ERROR'; object: Status };

export interface ListerWatcher<T extends KubeObject> {
  /** A human-readable name for logs and metrics, e.g. `projectcalico.org/v3/networkpolicies`. */
  readonly resource: string;
  list(opts: ListOptions): Promise<ListResult<T>>;
  /**
   * Opens a watch. The iterable ends when the server closes the stream; it throws
   * `StatusError` for an error response (e.g. 410 when the resourceVersion is too old).
   */
  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

/** An API error with its HTTP status code and `Status.reason`. */
export class StatusError extends Error {
  override name = 'StatusError';
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }

  static fromStatus(status: Status): StatusError {
    return new StatusError(status.code ?? 500, status.reason ?? '', status.message ?? 'unknown error');
  }
}

/** 410 Gone / reason Expired or Gone: the resourceVersion left the server's window; relist. */
export function isExpiredError(err: unknown): boolean {
  return err instanceof StatusError && (err.code === 410 || err.reason === 'Expired' || err.reason === 'Gone');
}

/** "Too large resource version": the server is behind the client; relist from "". */
export function isTooLargeResourceVersionError(err: unknown): boolean {
  return (
    err instanceof StatusError &&
    (err.reason === 'TooLargeResourceVersion' || /too large resource version/i.test(err.message))
  );
}
