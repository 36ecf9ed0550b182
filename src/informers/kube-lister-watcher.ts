/**
 * ListerWatcher over the Kubernetes API. @kubernetes/client-node supplies only the
 * connection settings (server, TLS, bearer token, exec/OIDC auth) through
 * `KubeConfig.applyToHTTPSOptions`; requests and the watch stream are plain `node:https`.
 *
 * Why not client-node's `Watch`: in 1.x it swallows every exception thrown while handling
 * a line, has no client-side timeout, and turns error responses into a bare status code,
 * losing the `Status` (and so the difference between `410 Expired` and other failures).
 * Here every failure surfaces: non-2xx responses become `StatusError` with the server's
 * reason and message, a malformed line fails the stream, and aborting the signal destroys
 * the request.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ListOptions, ListResult, ListerWatcher, Status, WatchEvent, WatchOptions } from './lister-watcher.ts';
import { StatusError } from './lister-watcher.ts';
import type { KubeObject } from './object.ts';

/**
 * The client-node connection settings, re-exported so the layers that pass one through
 * (the informer factory, the syncer) do not import the kube client themselves
 * (.dependency-cruiser.mjs: `kube-client-only-in-its-adapters`).
 */
export type { KubeConfig };

/** Identifies a resource collection: `/api/v1/pods`, `/apis/projectcalico.org/v3/tiers`, … */
export interface KubeResource {
  /** "" for the core group. */
  group: string;
  version: string;
  plural: string;
  /** Restrict to one namespace; all namespaces when absent. */
  namespace?: string;
}

export interface KubeListerWatcherOptions {
  kubeConfig: KubeConfig;
  resource: KubeResource;
  labelSelector?: string;
  fieldSelector?: string;
  /** Per-request timeout for list calls (watches use the server-side timeout). @default 60_000 */
  listTimeoutMs?: number;
}

/** The collection path of `resource`. */
export function resourcePath(resource: KubeResource): string {
  const base = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  const ns = resource.namespace === undefined ? '' : `/namespaces/${encodeURIComponent(resource.namespace)}`;
  return `${base}${ns}/${resource.plural}`;
}

/** `group/version/plural` (plus `@namespace`), the resource's name in logs and metrics. */
export function resourceName(resource: KubeResource): string {
  const gv = resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
  return `${gv}/${resource.plural}${resource.namespace === undefined ? '' : `@${resource.namespace}`}`;
}

interface RawList<T> {
  items?: T[];
  metadata?: { resourceVersion?: string; continue?: string };
}

export class KubeListerWatcher<T extends KubeObject> implements ListerWatcher<T> {
  readonly resource: string;
  private readonly kc: KubeConfig;
  private readonly path: string;
  private readonly labelSelector: string | undefined;
  private readonly fieldSelector: string | undefined;
  private readonly listTimeoutMs: number;

  constructor(opts: KubeListerWatcherOptions) {
    const { kubeConfig, resource, labelSelector, fieldSelector, listTimeoutMs = 60_000 } = opts;
    this.kc = kubeConfig;
    this.path = resourcePath(resource);
    this.resource = resourceName(resource);
    this.labelSelector = labelSelector;
    this.fieldSelector = fieldSelector;
    this.listTimeoutMs = listTimeoutMs;
  }

  async list(opts: ListOptions): Promise<ListResult<T>> {
    const query: Record<string, string | undefined> = {
      resourceVersion: opts.resourceVersion,
      limit: opts.limit === undefined ? undefined : String(opts.limit),
      continue: opts.continue,
    };
    const signal = opts.signal === undefined ? AbortSignal.timeout(this.listTimeoutMs) : AbortSignal.any([opts.signal, AbortSignal.timeout(this.listTimeoutMs)]);
    const res = await this.request(query, signal);
    const body = await readBody(res);
    if (res.statusCode !== 200) throw statusErrorFrom(res.statusCode ?? 0, body, `list ${this.resource}`);
    let parsed: RawList<T>;
    try {
      parsed = JSON.parse(body) as RawList<T>;
    } catch (err) {
      throw new Error(`list ${this.resource}: response is not JSON: ${(err as Error).message}`, { cause: err });
    }
    const cont = parsed.metadata?.continue;
    return {
      items: parsed.items ?? [],
      resourceVersion: parsed.metadata?.resourceVersion ?? '',
      ...(cont ? { continue: cont } : {}),
    };
  }

  watch(opts: WatchOptions): AsyncIterable<WatchEvent<T>> {
    return this.stream(opts);
  }

  private async *stream(opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    const query = {
      watch: 'true',
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: String(opts.allowWatchBookmarks),
      timeoutSeconds: String(opts.timeoutSeconds),
    };
    let res: http.IncomingMessage;
    try {
      res = await this.request(query, opts.signal);
    } catch (err) {
      if (opts.signal.aborted) return;
      throw err;
    }
    if (res.statusCode !== 200) {
      throw statusErrorFrom(res.statusCode ?? 0, await readBody(res), `watch ${this.resource}`);
    }
    // Let the kernel notice a dead peer on a quiet stream too (client-node does the same).
    res.socket.setKeepAlive(true, 30_000);
    res.setEncoding('utf8');
    let pending = '';
    try {
      for await (const chunk of res as AsyncIterable<string>) {
        pending += chunk;
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (line === '') continue;
          yield parseEvent<T>(line, this.resource);
        }
      }
    } catch (err) {
      if (opts.signal.aborted) return;
      throw err;
    } finally {
      res.destroy();
    }
    if (pending.trim() !== '' && !opts.signal.aborted) yield parseEvent<T>(pending.trim(), this.resource);
  }

  private async request(query: Record<string, string | undefined>, signal: AbortSignal): Promise<http.IncomingMessage> {
    const cluster = this.kc.getCurrentCluster();
    if (cluster === null) throw new Error('kubeconfig has no current cluster');
    const url = new URL(cluster.server + this.path);
    for (const [k, v] of Object.entries({ ...query, labelSelector: this.labelSelector, fieldSelector: this.fieldSelector })) {
      if (v !== undefined && v !== '') url.searchParams.set(k, v);
    }
    const options: https.RequestOptions = { method: 'GET', headers: { Accept: 'application/json' } };
    await this.kc.applyToHTTPSOptions(options);
    const transport = url.protocol === 'http:' ? http : https;
    return new Promise((resolve, reject) => {
      const req = transport.request(url, { ...options, signal }, resolve);
      req.on('error', reject);
      req.end();
    });
  }
}

function parseEvent<T>(line: string, resource: string): WatchEvent<T> {
  let ev: { type?: string; object?: unknown };
  try {
    ev = JSON.parse(line) as typeof ev;
  } catch (err) {
    throw new Error(`watch ${resource}: malformed event line: ${line.slice(0, 200)}`, { cause: err });
  }
  switch (ev.type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      return { type: ev.type, object: ev.object as T };
    case 'BOOKMARK':
      return { type: 'BOOKMARK', object: ev.object as KubeObject };
    case 'ERROR':
      return { type: 'ERROR', object: ev.object as Status };
    default:
      throw new Error(`watch ${resource}: unknown event type '${String(ev.type)}'`);
  }
}

async function readBody(res: http.IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let body = '';
  for await (const chunk of res as AsyncIterable<string>) body += chunk;
  return body;
}

function statusErrorFrom(code: number, body: string, what: string): StatusError {
  try {
    const status = JSON.parse(body) as Status;
    if (status.kind === 'Status') {
      return new StatusError(status.code ?? code, status.reason ?? '', `${what}: ${status.message ?? http.STATUS_CODES[code]}`);
    }
  } catch {
    // Not a Status body (e.g. a proxy's HTML error page): report the HTTP status below.
  }
  return new StatusError(code, http.STATUS_CODES[code] ?? '', `${what}: HTTP ${code}: ${body.slice(0, 200)}`);
}
