/**
 * Synchronous inflate of one chunk at a time on a persistent raw-deflate stream, for the Typha
 * bench's light agents (bench/typha-agents.ts): a 1,000-agent run inflates ~100,000 frames a
 * second, and node:zlib's stream API costs a threadpool round trip per frame, which is the
 * agents' overhead, not Typha's. node:zlib's own synchronous path (`inflateRawSync`) closes its
 * stream after one buffer, so this drives the stream's native handle the same way that path
 * does, without closing it. It relies on node:zlib internals (`_handle.writeSync`,
 * `_writeState`), stable across node 14–22; it is bench code only.
 */
import zlib from 'node:zlib';

interface ZlibInternals {
  _handle: { writeSync(flush: number, input: Buffer, inOff: number, inLen: number, out: Buffer, outOff: number, outLen: number): void };
  _writeState: Uint32Array;
}

const OUT_CHUNK = 64 * 1024;

export class SyncInflater {
  readonly #stream = zlib.createInflateRaw();
  readonly #z = this.#stream as unknown as ZlibInternals;
  #error: Error | undefined;

  constructor() {
    this.#stream.on('error', (err: Error) => (this.#error = err));
  }

  /** The bytes `chunk` (ending in a sync flush) inflates to. Throws on corrupt input. */
  inflate(chunk: Buffer): Buffer {
    const { Z_SYNC_FLUSH } = zlib.constants;
    const out: Buffer[] = [];
    let inOff = 0;
    let inLen = chunk.length;
    for (;;) {
      const buffer = Buffer.allocUnsafe(OUT_CHUNK);
      this.#z._handle.writeSync(Z_SYNC_FLUSH, chunk, inOff, inLen, buffer, 0, OUT_CHUNK);
      if (this.#error !== undefined) throw this.#error;
      const availOut = this.#z._writeState[0] as number;
      const availIn = this.#z._writeState[1] as number;
      const have = OUT_CHUNK - availOut;
      if (have > 0) out.push(buffer.subarray(0, have));
      if (availOut !== 0) break;
      inOff += inLen - availIn;
      inLen = availIn;
    }
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }

  close(): void {
    this.#stream.close();
  }
}
