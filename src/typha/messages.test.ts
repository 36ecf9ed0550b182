import { describe, expect, it } from 'vitest';

import { clientMaySend, decodeMessage, encodeMessage, MessageDecodeError, serverMaySend, type Message } from './messages.ts';
import { hello } from '../../test/typha/wire-harness.ts';

const decode = (obj: unknown): Message => decodeMessage(Buffer.from(JSON.stringify(obj)));

function decodeError(obj: unknown): MessageDecodeError {
  try {
    decode(obj);
  } catch (err) {
    if (err instanceof MessageDecodeError) return err;
    throw err;
  }
  throw new Error('expected a MessageDecodeError');
}

describe('messages', () => {
  it('every message type survives encode → decode', () => {
    const kv = { key: 'Tier//t', value: '{"kind":"Tier"}', resourceVersion: '3', updateType: 'new' } as const;
    const all: Message[] = [
      hello(),
      { type: 'server-hello', version: '1', syncerType: 'felix', serverConnId: 9 },
      { type: 'decoder-restart', compression: 'deflate-raw' },
      { type: 'ack' },
      { type: 'kvs', kvs: [kv, { key: 'Tier//u', value: null, resourceVersion: '', updateType: 'deleted' }] },
      { type: 'sync-status', status: 'in-sync' },
      { type: 'ping', timestamp: 12.5 },
      { type: 'pong', pingTimestamp: 12.5, pongTimestamp: 99 },
    ];
    for (const m of all) expect(decodeMessage(encodeMessage(m))).toEqual(m);
  });

  it('only the four SerializedUpdate fields go on the wire', () => {
    const kv = { key: 'Tier//t', value: '{}', resourceVersion: '', updateType: 'new' as const, secret: 'x' };
    expect(encodeMessage({ type: 'kvs', kvs: [kv] }).toString()).not.toContain('secret');
  });

  it('hello fields missing from the wire read as zero values (an old peer: feature absent); unknown fields are ignored', () => {
    expect(decode({ type: 'client-hello', hostname: 'n', futureField: 1 })).toEqual({
      type: 'client-hello',
      hostname: 'n',
      info: '',
      version: '',
      syncerType: '',
      supportsDecoderRestart: false,
      supportedCompression: [],
      clientConnId: 0,
    });
  });

  it('errors name the message type and the field', () => {
    expect(decodeError({ type: 'client-hello' }).message).toBe('client-hello: hostname: missing');
    expect(decodeError({ type: 'client-hello', hostname: 'n', supportsDecoderRestart: 'yes' }).field).toBe('supportsDecoderRestart');
    expect(decodeError({ type: 'client-hello', hostname: 'n', supportedCompression: ['gzip', 3] }).field).toBe('supportedCompression[1]');
    expect(decodeError({ type: 'kvs', kvs: [{ key: 'k', value: '{}', resourceVersion: '', updateType: 'new' }, { key: 'k', value: 1, resourceVersion: '', updateType: 'new' }] }).message).toBe(
      'kvs: kvs[1].value: expected a string or null',
    );
    expect(decodeError({ type: 'kvs', kvs: [{ key: 'k', value: '{}', resourceVersion: '', updateType: 'deleted' }] }).field).toBe('kvs[0].value');
    expect(decodeError({ type: 'kvs', kvs: [{ key: 'k', value: null, resourceVersion: '', updateType: 'gone' }] }).field).toBe('kvs[0].updateType');
    expect(decodeError({ type: 'sync-status', status: 'synced' }).message).toContain('unknown sync status "synced"');
    expect(decodeError({ type: 'ping' }).field).toBe('timestamp');
    expect(decodeError({ type: 'teleport' }).message).toBe('message: type: unknown message type "teleport"');
    expect(decodeError([1, 2]).message).toContain('not a JSON object');
  });

  it('more than 100 KVs in one message is rejected', () => {
    const kvs = Array.from({ length: 101 }, (_, i) => ({ key: `Tier//t${i}`, value: '{}', resourceVersion: '', updateType: 'new' }));
    expect(decodeError({ type: 'kvs', kvs }).message).toContain('101 updates exceed the maximum of 100');
  });

  it('non-UTF-8 or non-JSON payloads are decode errors, not crashes', () => {
    expect(() => decodeMessage(Buffer.from([0xff, 0xfe, 0x7b]))).toThrow(MessageDecodeError);
    expect(() => decodeMessage(Buffer.from('{"type":'))).toThrow(MessageDecodeError);
    expect(() => decodeMessage(Buffer.alloc(0))).toThrow(MessageDecodeError);
  });

  it('never send what the peer did not announce: decoder-restart only to a client that supports it; ack/pong only in answer', () => {
    expect(serverMaySend('kvs', undefined)).toBe(false);
    expect(serverMaySend('decoder-restart', hello({ supportsDecoderRestart: false }))).toBe(false);
    expect(serverMaySend('decoder-restart', hello())).toBe(true);
    expect(serverMaySend('ping', hello({ supportsDecoderRestart: false }))).toBe(true);
    expect(clientMaySend('client-hello', { sentHello: false, unackedRestarts: 0, unansweredPings: 0 })).toBe(true);
    expect(clientMaySend('client-hello', { sentHello: true, unackedRestarts: 0, unansweredPings: 0 })).toBe(false);
    expect(clientMaySend('ack', { sentHello: true, unackedRestarts: 0, unansweredPings: 0 })).toBe(false);
    expect(clientMaySend('pong', { sentHello: true, unackedRestarts: 0, unansweredPings: 1 })).toBe(true);
  });
});
