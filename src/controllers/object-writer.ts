/**
 * The controllers' only path to the API server for writes. Every write goes through one
 * p-queue (a global write throttle, kubernetes-and-node §2.7), uses server-side apply under
 * the `tessera-controllers` field manager, and treats "already gone" deletes as success.
 *
 * `apply` returns the object as stored. If the stored spec still differs from what was
 * applied — a hand edit added fields under another field manager, which an apply cannot
 * remove — the object is replaced (optimistic concurrency on the returned
 * resourceVersion), so drift is always reverted.
 */
import { hostname } from 'node:os';

import {
  ApiException,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import PQueue from 'p-queue';

import { FIELD_MANAGER } from './ownership.ts';
import { canonicalJson } from './canonical-json.ts';

/** What the controllers write: any typed resource with a name (and a spec to converge). */
export interface WrittenObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: unknown[] };
  spec?: unknown;
}

type Stored = KubernetesObject & { spec?: unknown };

export interface ObjectWriterOptions {
  kubeConfig: KubeConfig;
  /** Concurrent writes. @default 8 */
  concurrency?: number;
  /** Writes per second. @default 50 */
  writesPerSecond?: number;
}

/** The involved object of an Event. */
export interface EventSubject {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
  resourceVersion?: string;
}

export function httpStatus(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown; statusCode?: unknown } | null)?.code ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** What a conditional delete requires of the stored object (`DeleteOptions.preconditions`). */
export interface DeletePreconditions {
  uid?: string;
  resourceVersion?: string;
}

/** What the controllers need from a writer (ObjectWriter; fakes in tests and figures). */
export interface Writer {
  apply(obj: WrittenObject): Promise<unknown>;
  createIfAbsent(obj: WrittenObject): Promise<boolean>;
  /** With `preconditions`, the API server refuses (409) to delete an object whose uid or resourceVersion differ. */
  delete(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }, preconditions?: DeletePreconditions): Promise<boolean>;
  warningEvent(subject: EventSubject, reason: string, message: string): Promise<void>;
  idle(): Promise<void>;
}

export class ObjectWriter implements Writer {
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  private readonly throttle: PQueue;
  private readonly instance = hostname();

  constructor(opts: ObjectWriterOptions) {
    const { kubeConfig, concurrency = 8, writesPerSecond = 50 } = opts;
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.throttle = new PQueue({ concurrency, intervalCap: writesPerSecond, interval: 1000 });
  }

  /** Server-side apply (forced); replaces when foreign fields keep the spec from converging. */
  async apply(obj: WrittenObject): Promise<Stored> {
    const body = obj as unknown as Stored;
    const stored = await this.write(() =>
      this.objects.patch<Stored>(body, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
    if (obj.spec !== undefined && canonicalJson(stored.spec) !== canonicalJson(obj.spec)) {
      const rv = stored.metadata?.resourceVersion;
      const replacement = { ...body, metadata: { ...body.metadata, ...(rv === undefined ? {} : { resourceVersion: rv }) } };
      return this.write(() => this.objects.replace<Stored>(replacement, undefined, undefined, FIELD_MANAGER));
    }
    return stored;
  }

  /** Creates `obj` unless an object of that name exists; true when it was created. */
  async createIfAbsent(obj: WrittenObject): Promise<boolean> {
    try {
      await this.write(() => this.objects.create(obj as unknown as Stored, undefined, undefined, FIELD_MANAGER));
      return true;
    } catch (err) {
      if (httpStatus(err) === 409) return false;
      throw err;
    }
  }

  /** Deletes the object; true when it existed. A failed precondition is a 409 ApiException. */
  async delete(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }, preconditions?: DeletePreconditions): Promise<boolean> {
    const ref: KubernetesObject = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: obj.metadata.name, ...(obj.metadata.namespace === undefined ? {} : { namespace: obj.metadata.namespace }) } };
    const body = preconditions === undefined ? undefined : { preconditions };
    try {
      await this.write(() => this.objects.delete(ref, undefined, undefined, undefined, undefined, undefined, body));
      return true;
    } catch (err) {
      if (httpStatus(err) === 404) return false;
      throw err;
    }
  }

  /** A core/v1 Warning Event about `subject`. */
  async warningEvent(subject: EventSubject, reason: string, message: string): Promise<void> {
    const now = new Date();
    await this.write(() =>
      this.core.createNamespacedEvent({
        namespace: subject.namespace,
        body: {
          metadata: { generateName: `${subject.name}.`, namespace: subject.namespace },
          involvedObject: {
            apiVersion: subject.apiVersion,
            kind: subject.kind,
            namespace: subject.namespace,
            name: subject.name,
            ...(subject.uid ? { uid: subject.uid } : {}),
            ...(subject.resourceVersion ? { resourceVersion: subject.resourceVersion } : {}),
          },
          reason,
          message,
          type: 'Warning',
          source: { component: FIELD_MANAGER },
          reportingComponent: FIELD_MANAGER,
          reportingInstance: this.instance,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      }),
    );
  }

  /** Resolves once no write is queued or running. */
  async idle(): Promise<void> {
    await this.throttle.onIdle();
  }

  private async write<T>(fn: () => Promise<T>): Promise<T> {
    return this.throttle.add(fn) as Promise<T>;
  }
}
