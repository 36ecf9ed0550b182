import { describe, expect, it } from 'vitest';

import { CompressionError, negotiateCompression, StreamCompressor, StreamDecompressor, SUPPORTED_COMPRESSION, DEFAULT_SERVER_COMPRESSION } from './compression.ts';
import { encodeMessage } from './messages.ts';
import { workloadEndpointSnapshot } from '../../test/typha/workload-endpoint-fixture.ts';

describe('compression', () => {
  it('negotiation: the server preference wins among what the client offered; nothing in common means none', () => {
    expect(negotiateCompression(['brotli', 'deflate-raw'], ['deflate-raw', 'brotli'])).toBe('deflate-raw');
    expect(negotiateCompression(['zstd', 'gzip'], ['deflate-raw', 'gzip'])).toBe('gzip');
    expect(negotiateCompression([], DEFAULT_SERVER_COMPRESSION)).toBeUndefined();
    expect(negotiateCompression(['snappy'], DEFAULT_SERVER_COMPRESSION)).toBeUndefined();
  });

  for (const algorithm of SUPPORTED_COMPRESSION) {
    it(`${algorithm}: each chunk decompresses to exactly its message, across one shared stream`, async () => {
      const kvs = workloadEndpointSnapshot(300);
      const messages = [
        ...Array.from({ length: 3 }, (_, i) => encodeMessage({ type: 'kvs', kvs: kvs.slice(i * 100, i * 100 + 100) })),
        ...kvs.slice(0, 50).map((kv) => encodeMessage({ type: 'kvs', kvs: [kv] })),
      ];
      const c = new StreamCompressor(algorithm);
      const d = new StreamDecompressor(algorithm, 1 << 20);
      let raw = 0;
      let wire = 0;
      // Issue all compressions at once: the compressor serialises them.
      const chunks = await Promise.all(messages.map((m) => c.compress(m)));
      for (const [i, chunk] of chunks.entries()) {
        raw += (messages[i] as Buffer).length;
        wire += chunk.length;
        expect((await d.decompress(chunk)).equals(messages[i] as Buffer)).toBe(true);
      }
      // Realistic data compresses several-fold (the measured figures are in compression.ts).
      expect(raw / wire).toBeGreaterThan(5);
      c.close();
      d.close();
    });
  }

  it('the measured choice holds: deflate-raw beats no compression by > 10x on a 10,000-endpoint snapshot', async () => {
    const kvs = workloadEndpointSnapshot(10_000);
    const c = new StreamCompressor('deflate-raw');
    let raw = 0;
    let wire = 0;
    for (let i = 0; i < kvs.length; i += 100) {
      const m = encodeMessage({ type: 'kvs', kvs: kvs.slice(i, i + 100) });
      raw += m.length;
      wire += (await c.compress(m)).length;
    }
    c.close();
    expect(raw).toBe(10_849_791);
    expect(raw / wire).toBeGreaterThan(10);
  });

  it('garbage input and decompression bombs are CompressionErrors, and the stream stays failed', async () => {
    const d = new StreamDecompressor('deflate-raw', 1 << 20);
    await expect(d.decompress(Buffer.from('this is not deflate data at all, no'))).rejects.toBeInstanceOf(CompressionError);
    await expect(d.decompress(Buffer.from('x'))).rejects.toBeInstanceOf(CompressionError);
    const bomb = await new StreamCompressor('deflate-raw').compress(Buffer.alloc(4 << 20));
    const small = new StreamDecompressor('deflate-raw', 1 << 20);
    await expect(small.decompress(bomb)).rejects.toThrow(/expanded to more than 1048576 bytes/);
  });
});
