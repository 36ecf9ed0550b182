/**
 * The messages of Typha's sync protocol (typha.md §2.3) and their encoding: one message per
 * frame (frame-codec.ts), the payload the UTF-8 JSON of the message with a `type` tag.
 *
 * Compatibility rules (§2.6), which the decoder and `serverMaySend`/`clientMaySend` enforce:
 * - the `type` tags are the stable wire names; a refactor never renames one;
 * - a message type is sent only if the peer announced it in its hello (`serverMaySend`): the
 *   base set every peer understands, plus `decoder-restart` only to a client that set
 *   `supportsDecoderRestart`; a client sends `ack` only in answer to a restart and `pong` only
 *   in answer to a ping;
 * - new behaviour is negotiated only through hello fields; a field missing from the wire
 *   decodes as its zero value ("feature absent", like gob), and unknown fields are ignored;
 * - everything present is validated strictly: a wrong type or value is a `MessageDecodeError`
 *   naming the message type and the field (`kvs: kvs[3].updateType: …`).
 */
import type { SerializedUpdate, UpdateType } from './serialized-update.ts';
import type { SyncStatus } from '../syncer/index.ts';

/** typha.md §2.3 `ServerMaxMessageSize`: at most 100 KVs per `kvs` message. */
export const MAX_KVS_PER_MESSAGE = 100;

/** The only syncer type Tessera serves; an empty `syncerType` means felix (§2.3, since v3.3). */
export const SYNCER_TYPE_FELIX = 'felix';

export interface ClientHello {
  readonly type: 'client-hello';
  /** The node the client runs on. */
  readonly hostname: string;
  /** Free text for logs (e.g. `tessera-agent`). */
  readonly info: string;
  readonly version: string;
  /** `felix` or '' (= felix). */
  readonly syncerType: string;
  /** Whether the client understands `decoder-restart` (and will `ack` it). */
  readonly supportsDecoderRestart: boolean;
  /** Compression algorithms the client can decode, in its order of preference. */
  readonly supportedCompression: readonly string[];
  /** The client's id for this connection, for correlating both sides' logs. */
  readonly clientConnId: number;
}

export interface ServerHello {
  readonly type: 'server-hello';
  readonly version: string;
  /** The syncer type being served; '' would be an old server that only knows felix. */
  readonly syncerType: string;
  readonly serverConnId: number;
}

/** From the next frame on, frames are a fresh stream in `compression` ('none': plain). */
export interface DecoderRestart {
  readonly type: 'decoder-restart';
  readonly compression: string;
}

export interface Ack {
  readonly type: 'ack';
}

export interface KVs {
  readonly type: 'kvs';
  readonly kvs: readonly SerializedUpdate[];
}

export interface SyncStatusMessage {
  readonly type: 'sync-status';
  readonly status: SyncStatus;
}

export interface Ping {
  readonly type: 'ping';
  /** The server's clock (ms) when it sent the ping; echoed in the pong. */
  readonly timestamp: number;
}

export interface Pong {
  readonly type: 'pong';
  readonly pingTimestamp: number;
  /** The client's clock (ms) when it answered (only for logs: the clocks are unrelated). */
  readonly pongTimestamp: number;
}

export type ServerMessage = ServerHello | DecoderRestart | KVs | SyncStatusMessage | Ping;
export type ClientMessage = ClientHello | Ack | Pong;
export type Message = ServerMessage | ClientMessage;
export type MessageType = Message['type'];

const MESSAGE_TYPES: ReadonlySet<string> = new Set<MessageType>(['client-hello', 'server-hello', 'decoder-restart', 'ack', 'kvs', 'sync-status', 'ping', 'pong']);
const SYNC_STATUSES: ReadonlySet<string> = new Set<SyncStatus>(['wait-for-datastore', 'resync-in-progress', 'in-sync']);
const UPDATE_TYPES: ReadonlySet<string> = new Set<UpdateType>(['new', 'updated', 'deleted']);

/** A payload that is not a valid message; `field` is the offending field (empty for the payload itself). */
export class MessageDecodeError extends Error {
  override readonly name = 'MessageDecodeError';
  constructor(
    readonly messageType: string,
    readonly field: string,
    detail: string,
  ) {
    super(`${messageType}: ${field === '' ? '' : `${field}: `}${detail}`);
  }
}

/** A side tried to send what the peer did not announce (a bug in this process, never the peer's fault). */
export class ProtocolViolationError extends Error {
  override readonly name = 'ProtocolViolationError';
}

/** Whether the server may send `type` to a client that said `hello` (before the hello: nothing). */
export function serverMaySend(type: ServerMessage['type'], hello: ClientHello | undefined): boolean {
  if (hello === undefined) return false;
  return type === 'decoder-restart' ? hello.supportsDecoderRestart : true;
}

/** Whether the client may send `type`: its hello first; `ack`/`pong` only in answer to what the server sent. */
export function clientMaySend(type: ClientMessage['type'], state: { sentHello: boolean; unackedRestarts: number; unansweredPings: number }): boolean {
  switch (type) {
    case 'client-hello':
      return !state.sentHello;
    case 'ack':
      return state.sentHello && state.unackedRestarts > 0;
    case 'pong':
      return state.sentHello && state.unansweredPings > 0;
  }
}

/**
 * Each update's JSON, built once per update object and reused by every message that carries it
 * (snapshots, per-crumb messages, every lagging client's merged batches): the escaping of the
 * value string is the expensive part of encoding a `kvs` message. Keyed weakly by the
 * (immutable, shared) SerializedUpdate, so a fragment lives as long as its update.
 */
const kvJSON = new WeakMap<SerializedUpdate, string>();

function encodeKV(u: SerializedUpdate): string {
  let json = kvJSON.get(u);
  if (json === undefined) {
    json = JSON.stringify({ key: u.key, value: u.value, resourceVersion: u.resourceVersion, updateType: u.updateType });
    kvJSON.set(u, json);
  }
  return json;
}

/** The wire form of `msg`. KVs are written field by field, so extra properties on an update never leak onto the wire. */
export function encodeMessage(msg: Message): Buffer {
  if (msg.type === 'kvs') return Buffer.from(`{"type":"kvs","kvs":[${msg.kvs.map(encodeKV).join(',')}]}`);
  return Buffer.from(JSON.stringify(msg));
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Parses and validates one message; throws `MessageDecodeError`. */
export function decodeMessage(payload: Uint8Array, opts: { maxKVs?: number } = {}): Message {
  const { maxKVs = MAX_KVS_PER_MESSAGE } = opts;
  let raw: unknown;
  try {
    raw = JSON.parse(UTF8.decode(payload));
  } catch (err) {
    throw new MessageDecodeError('message', '', `payload is not UTF-8 JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new MessageDecodeError('message', '', 'payload is not a JSON object');
  const obj = raw as Record<string, unknown>;
  const type = obj['type'];
  if (typeof type !== 'string') throw new MessageDecodeError('message', 'type', 'missing or not a string');
  if (!MESSAGE_TYPES.has(type)) throw new MessageDecodeError('message', 'type', `unknown message type ${JSON.stringify(type)}`);
  const f = new Fields(type, obj);
  switch (type as MessageType) {
    case 'client-hello':
      return {
        type: 'client-hello',
        hostname: f.string('hostname', { required: true, nonEmpty: true }),
        info: f.string('info'),
        version: f.string('version'),
        syncerType: f.string('syncerType'),
        supportsDecoderRestart: f.boolean('supportsDecoderRestart'),
        supportedCompression: f.stringArray('supportedCompression'),
        clientConnId: f.id('clientConnId'),
      };
    case 'server-hello':
      return { type: 'server-hello', version: f.string('version'), syncerType: f.string('syncerType'), serverConnId: f.id('serverConnId') };
    case 'decoder-restart':
      return { type: 'decoder-restart', compression: f.string('compression', { required: true, nonEmpty: true }) };
    case 'ack':
      return { type: 'ack' };
    case 'kvs':
      return { type: 'kvs', kvs: f.kvs('kvs', maxKVs) };
    case 'sync-status': {
      const status = f.string('status', { required: true });
      if (!SYNC_STATUSES.has(status)) throw new MessageDecodeError(type, 'status', `unknown sync status ${JSON.stringify(status)}`);
      return { type: 'sync-status', status: status as SyncStatus };
    }
    case 'ping':
      return { type: 'ping', timestamp: f.number('timestamp') };
    case 'pong':
      return { type: 'pong', pingTimestamp: f.number('pingTimestamp'), pongTimestamp: f.number('pongTimestamp') };
  }
}

/** Typed field readers that name the field in every error. */
class Fields {
  constructor(
    private readonly type: string,
    private readonly obj: Record<string, unknown>,
  ) {}

  #fail(field: string, detail: string): never {
    throw new MessageDecodeError(this.type, field, detail);
  }

  string(name: string, opts: { required?: boolean; nonEmpty?: boolean } = {}): string {
    const v = this.obj[name];
    if (v === undefined || v === null) {
      if (opts.required) this.#fail(name, 'missing');
      return '';
    }
    if (typeof v !== 'string') this.#fail(name, `expected a string, got ${typeof v}`);
    if (opts.nonEmpty && v === '') this.#fail(name, 'must not be empty');
    return v;
  }

  boolean(name: string): boolean {
    const v = this.obj[name];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') this.#fail(name, `expected a boolean, got ${typeof v}`);
    return v;
  }

  number(name: string): number {
    const v = this.obj[name];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.#fail(name, `expected a finite number, got ${JSON.stringify(v) ?? 'undefined'}`);
    return v;
  }

  id(name: string): number {
    const v = this.obj[name];
    if (v === undefined || v === null) return 0;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) this.#fail(name, `expected a non-negative integer, got ${JSON.stringify(v)}`);
    return v;
  }

  stringArray(name: string): string[] {
    const v = this.obj[name];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) this.#fail(name, 'expected an array of strings');
    return v.map((x, i) => (typeof x === 'string' ? x : this.#fail(`${name}[${i}]`, `expected a string, got ${typeof x}`)));
  }

  kvs(name: string, max: number): SerializedUpdate[] {
    const v = this.obj[name];
    if (!Array.isArray(v)) this.#fail(name, 'expected an array of updates');
    if (v.length > max) this.#fail(name, `${v.length} updates exceed the maximum of ${max} per message`);
    return v.map((u, i) => this.#update(`${name}[${i}]`, u));
  }

  #update(path: string, u: unknown): SerializedUpdate {
    if (typeof u !== 'object' || u === null || Array.isArray(u)) this.#fail(path, 'expected an object');
    const o = u as Record<string, unknown>;
    const { key, value, resourceVersion, updateType } = o;
    if (typeof key !== 'string' || key === '') this.#fail(`${path}.key`, 'expected a non-empty string');
    if (value !== null && typeof value !== 'string') this.#fail(`${path}.value`, 'expected a string or null');
    if (typeof resourceVersion !== 'string') this.#fail(`${path}.resourceVersion`, 'expected a string');
    if (typeof updateType !== 'string' || !UPDATE_TYPES.has(updateType)) this.#fail(`${path}.updateType`, `expected new, updated or deleted, got ${JSON.stringify(updateType)}`);
    if ((value === null) !== (updateType === 'deleted')) this.#fail(`${path}.value`, `a ${updateType} update must ${updateType === 'deleted' ? '' : 'not '}have a null value`);
    return { key, value, resourceVersion, updateType: updateType as UpdateType };
  }
}
