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

/**
 * The output of every inflater in the process: a worker's agents inflate one frame at a time on
 * one thread, so a view of one scratch buffer serves them all (a fresh 64 KiB buffer per frame
 * was ~6 GB/s of garbage at 1,000 agents and was the bench's own bottleneck).
 */
let scratch = Buffer.allocUnsafe(1 << 20);

export class SyncInflater {
  readonly #stream = zlib.createInflateRaw();
  readonly #z = this.#stream as unknown as ZlibInternals;
  #error: Error | undefined;

  constructor() {
    this.#stream.on('error', (err: Error) => (this.#error = err));
  }

  /**
   * The bytes `chunk` (ending in a sync flush) inflates to, as a view of the shared scratch
   * buffer: valid only until the next `inflate` of any SyncInflater. Throws on corrupt input.
   */
  inflate(chunk: Buffer): Buffer {
    const { Z_SYNC_FLUSH } = zlib.constants;
    let inOff = 0;
    let inLen = chunk.length;
    let have = 0;
    for (;;) {
      const room = scratch.length - have;
      this.#z._handle.writeSync(Z_SYNC_FLUSH, chunk, inOff, inLen, scratch, have, room);
      if (this.#error !== undefined) throw this.#error;
      const availOut = this.#z._writeState[0] as number;
      const availIn = this.#z._writeState[1] as number;
      have += room - availOut;
      if (availOut !== 0) break;
      // Output filled the scratch buffer: grow it (keeping what was inflated) and go on.
      const bigger = Buffer.allocUnsafe(scratch.length * 2);
      scratch.copy(bigger, 0, 0, have);
      scratch = bigger;
      inOff += inLen - availIn;
      inLen = availIn;
    }
    return scratch.subarray(0, have);
  }

  close(): void {
    this.#stream.close();
  }
}
