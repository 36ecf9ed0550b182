/**
 * Compression of Typha's stream (typha.md §2.3 `DecoderRestart`, §10 "free to change"),
 * negotiated in the hello: the client lists what it can decode, the server picks the first of
 * its own preference list that the client offered; a client that offers none gets none.
 *
 * Stream shape: after a `decoder-restart` naming an algorithm, every frame's payload is the next
 * chunk of ONE compression stream, flushed (Z_SYNC_FLUSH / BROTLI_OPERATION_FLUSH) after each
 * message, so each frame decompresses to exactly one message while the window is shared across
 * messages (small deltas compress against everything sent before). A later restart starts a
 * fresh stream; that is how a snapshot compressed once can be shared by every client (see
 * snapshot-encoder.ts).
 *
 * The choice, by measurement (`workloadEndpointSnapshot(10_000)` in
 * testing/workload-endpoint-fixture.ts: 10,000 WorkloadEndpoints, 799 B of JSON each, as 100 `kvs`
 * messages of 100 = 10,849,791 B raw; node 20 zlib, 2-core VM, 5 runs, time ranges shown):
 *
 * | algorithm (stream, flush per message) | snapshot bytes | ratio | compress | decompress |
 * |---|---|---|---|---|
 * | deflate-raw level 1                   | 1,230,079 | 8.8×  | 48–114 ms  | 47–63 ms |
 * | **deflate-raw level 6** (zlib default) | **975,148** | **11.1×** | **106–135 ms** | **26–69 ms** |
 * | deflate-raw level 9                   |   897,172 | 12.1× | 567–774 ms | 28–67 ms |
 * | gzip level 6                          |   975,158 | 11.1× | 113–180 ms | 36–80 ms |
 * | brotli quality 4                      | 1,059,900 | 10.2× | 116–321 ms | 37–98 ms |
 * | brotli quality 5, lgwin 18            |   879,049 | 12.3× | ~97 ms     | ~38 ms |
 * | brotli quality 6                      |   828,306 | 13.1× | 240–440 ms | 33–134 ms |
 * | brotli quality 11                     |   645,642 | 16.8× | 28.6 s     | 71 ms |
 *
 * Deltas (2,000 single-KV messages, 2,226,003 B raw, one stream): deflate-raw 6 → 248,950 B
 * (8.9×), gzip 6 the same + 5 B, brotli 5/lgwin 18 → 252,256 B (8.8×), brotli 6 → 240,916 B (9.2×).
 *
 * Per-connection state decides it: every connection has its own compressor for what is
 * per-connection (and for the deltas of a client that lags when it would join the shared delta
 * stream, crumb-message-cache.ts), and it lives as long as the connection. After 3.2 MB of traffic a deflate-raw stream held
 * 166 KiB of RSS; brotli 6 held 5.2 MiB (lgwin 22), 2.8 MiB with lgwin 18 — 17-31× more, i.e.
 * gigabytes at a few thousand clients, for 10-18 % fewer snapshot bytes. gzip is deflate plus a
 * header and a CRC: no gain. So the server prefers **deflate-raw level 6**; gzip and brotli
 * (quality 5, lgwin 18) are implemented so a deployment can prefer them (`SyncServerOptions.compression`).
 */
import zlib from 'node:zlib';

export type CompressionAlgorithm = 'deflate-raw' | 'gzip' | 'brotli';

/** The `decoder-restart` value meaning "plain frames". */
export const COMPRESSION_NONE = 'none';

/** Every algorithm this module implements; what a client offers by default. */
export const SUPPORTED_COMPRESSION: readonly CompressionAlgorithm[] = ['deflate-raw', 'gzip', 'brotli'];

/** The server's default preference: the measured choice above. */
export const DEFAULT_SERVER_COMPRESSION: readonly CompressionAlgorithm[] = ['deflate-raw'];

export function isCompressionAlgorithm(s: string): s is CompressionAlgorithm {
  return (SUPPORTED_COMPRESSION as readonly string[]).includes(s);
}

/**
 * The server's pick: the first algorithm of `serverPreference` the client offered; undefined
 * (no compression) when there is none in common. Unknown names in the offer are ignored — a
 * newer client may know algorithms this server does not.
 */
export function negotiateCompression(clientOffer: readonly string[], serverPreference: readonly CompressionAlgorithm[]): CompressionAlgorithm | undefined {
  return serverPreference.find((a) => clientOffer.includes(a));
}

/** A compression stream failed or a chunk decompressed to more than allowed. */
export class CompressionError extends Error {
  override readonly name = 'CompressionError';
}

type ZlibStream = zlib.Deflate | zlib.DeflateRaw | zlib.Gzip | zlib.Inflate | zlib.InflateRaw | zlib.Gunzip | zlib.BrotliCompress | zlib.BrotliDecompress;

/**
 * One zlib stream driven one chunk at a time: write the chunk (the stream is created with a
 * per-write flush flag, so each write is ONE threadpool job that ends flushed), and collect exactly the
 * output of that chunk. Calls are serialised (a stream is sequential). After an error every
 * further call rejects with it.
 */
class ChunkedZlib {
  readonly #stream: ZlibStream;
  readonly #maxOutput: number;
  #out: Buffer[] = [];
  #outBytes = 0;
  #error: Error | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  #fail: ((err: Error) => void) | undefined;

  constructor(stream: ZlibStream, maxOutput: number, what: string) {
    this.#stream = stream;
    this.#maxOutput = maxOutput;
    stream.on('data', (d: Buffer) => {
      this.#outBytes += d.length;
      if (this.#outBytes > this.#maxOutput) {
        this.#setError(new CompressionError(`${what}: a chunk expanded to more than ${this.#maxOutput} bytes`));
        stream.destroy();
        return;
      }
      this.#out.push(d);
    });
    stream.on('error', (err: Error) => this.#setError(new CompressionError(`${what}: ${err.message}`)));
  }

  #setError(err: Error): void {
    if (this.#error !== undefined) return;
    this.#error = err;
    this.#fail?.(err);
  }

  process(chunk: Buffer): Promise<Buffer> {
    const run = (): Promise<Buffer> =>
      new Promise<Buffer>((resolve, reject) => {
        if (this.#error !== undefined) {
          reject(this.#error);
          return;
        }
        this.#fail = reject;
        this.#stream.write(chunk, () => {
          this.#fail = undefined;
          if (this.#error !== undefined) {
            reject(this.#error);
            return;
          }
          const out = this.#out.length === 1 ? (this.#out[0] as Buffer) : Buffer.concat(this.#out);
          this.#out = [];
          this.#outBytes = 0;
          resolve(out);
        });
      });
    const result = this.#chain.then(run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  close(): void {
    this.#stream.destroy();
  }
}

/** Per-message compression on one stream (the sending side). */
export class StreamCompressor {
  readonly algorithm: CompressionAlgorithm;
  readonly #z: ChunkedZlib;

  constructor(algorithm: CompressionAlgorithm) {
    this.algorithm = algorithm;
    const { Z_SYNC_FLUSH, BROTLI_OPERATION_FLUSH, BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN } = zlib.constants;
    const stream =
      algorithm === 'brotli'
        ? zlib.createBrotliCompress({ flush: BROTLI_OPERATION_FLUSH, params: { [BROTLI_PARAM_QUALITY]: 5, [BROTLI_PARAM_LGWIN]: 18 } })
        : algorithm === 'gzip'
          ? zlib.createGzip({ level: 6, flush: Z_SYNC_FLUSH })
          : zlib.createDeflateRaw({ level: 6, flush: Z_SYNC_FLUSH });
    this.#z = new ChunkedZlib(stream, Number.MAX_SAFE_INTEGER, `${algorithm} compressor`);
  }

  /** The compressed chunk carrying exactly `message`. */
  compress(message: Buffer): Promise<Buffer> {
    return this.#z.process(message);
  }

  close(): void {
    this.#z.close();
  }
}

/** The receiving side: each chunk decompresses to one message of at most `maxOutputBytes`. */
export class StreamDecompressor {
  readonly algorithm: CompressionAlgorithm;
  readonly #z: ChunkedZlib;

  constructor(algorithm: CompressionAlgorithm, maxOutputBytes: number) {
    this.algorithm = algorithm;
    const { Z_SYNC_FLUSH, BROTLI_OPERATION_FLUSH } = zlib.constants;
    const stream =
      algorithm === 'brotli'
        ? zlib.createBrotliDecompress({ flush: BROTLI_OPERATION_FLUSH })
        : algorithm === 'gzip'
          ? zlib.createGunzip({ flush: Z_SYNC_FLUSH })
          : zlib.createInflateRaw({ flush: Z_SYNC_FLUSH });
    this.#z = new ChunkedZlib(stream, maxOutputBytes, `${algorithm} decompressor`);
  }

  decompress(chunk: Buffer): Promise<Buffer> {
    return this.#z.process(chunk);
  }

  close(): void {
    this.#z.close();
  }
}
