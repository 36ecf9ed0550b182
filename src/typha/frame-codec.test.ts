import { describe, expect, it } from 'vitest';

import { seededRandom } from '../runtime/seeded-random.ts';
import { encodeFrame, FrameDecoder, FrameError } from './frame-codec.ts';

function randomBytes(random: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(random() * 256);
  return b;
}

/** Splits `bytes` into chunks of random sizes (including empty ones). */
function chop(random: () => number, bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; ) {
    const n = Math.floor(random() * 40);
    out.push(bytes.subarray(i, i + n));
    i += n;
  }
  return out;
}

describe('frame codec', () => {
  it('frames come out whole and in order whatever the chunking', () => {
    const random = seededRandom(7);
    for (let round = 0; round < 200; round++) {
      const payloads = Array.from({ length: 1 + Math.floor(random() * 8) }, () => randomBytes(random, Math.floor(random() * 100)));
      const decoder = new FrameDecoder({ maxFrameBytes: 1000 });
      const out: Buffer[] = [];
      for (const chunk of chop(random, Buffer.concat(payloads.map((p) => encodeFrame(p))))) {
        const r = decoder.push(chunk);
        expect(r.error).toBeUndefined();
        out.push(...r.frames);
      }
      expect(decoder.end()).toBeUndefined();
      expect(out.map((b) => b.toString('hex'))).toEqual(payloads.map((b) => b.toString('hex')));
    }
  });

  it('a length prefix over the maximum is an oversized error at once, before any payload is buffered', () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 1024 });
    const header = Buffer.alloc(4);
    header.writeUInt32BE(0xffffffff);
    const r = decoder.push(Buffer.concat([encodeFrame(Buffer.from('ok')), header]));
    expect(r.frames.map(String)).toEqual(['ok']);
    expect(r.error).toBeInstanceOf(FrameError);
    expect(r.error?.reason).toBe('oversized');
    expect(r.error?.message).toContain('4294967295');
    expect(decoder.bufferedBytes).toBe(0);
    // Failure is sticky: a stream cannot be resynchronised after a bad length.
    expect(decoder.push(encodeFrame(Buffer.from('later'))).error?.reason).toBe('oversized');
  });

  it('a stream that ends inside a header or a payload is a truncated error naming the byte counts', () => {
    const d1 = new FrameDecoder();
    d1.push(Buffer.from([0, 0]));
    expect(d1.end()?.reason).toBe('truncated');
    const d2 = new FrameDecoder();
    d2.push(encodeFrame(Buffer.from('hello')).subarray(0, 7));
    const err = d2.end();
    expect(err?.reason).toBe('truncated');
    expect(err?.message).toContain('after 7 of 9 bytes');
  });

  it('random bytes never throw: each input ends as frames, an oversized error, or a truncation', () => {
    const random = seededRandom(42);
    for (let round = 0; round < 2000; round++) {
      const decoder = new FrameDecoder({ maxFrameBytes: 1 + Math.floor(random() * 512) });
      const input = randomBytes(random, Math.floor(random() * 600));
      for (const chunk of chop(random, input)) {
        const r = decoder.push(chunk);
        for (const f of r.frames) expect(f.length).toBeLessThanOrEqual(512);
        if (r.error !== undefined) expect(r.error.reason).toBe('oversized');
      }
      const end = decoder.end();
      if (end !== undefined) expect(['oversized', 'truncated']).toContain(end.reason);
    }
  });

  it('refuses to encode a payload over the maximum, and rejects a nonsensical maximum', () => {
    expect(() => encodeFrame(Buffer.alloc(11), 10)).toThrow(RangeError);
    expect(() => new FrameDecoder({ maxFrameBytes: 0 })).toThrow(/maxFrameBytes/);
  });
});
