/**
 * Frame boundaries of a Typha byte stream without copying a byte (frame-codec.ts's format: a
 * 4-byte big-endian length, then the payload): what the fan-out bench's drain readers do with
 * everything after the handshake, so that a connection's reader costs the bench only the
 * socket read and this count — inflating and decoding are each node's own CPU, measured apart
 * (bench/typha-node-cost.ts).
 *
 * Invariant: after any sequence of `push`es, `frames` is the number of complete frames in the
 * bytes pushed and `bytes` their total, however the stream was split into chunks (a header
 * split across chunks included).
 */
import { FRAME_HEADER_BYTES } from '../src/typha/frame-codec.ts';

export class FrameCounter {
  frames = 0;
  bytes = 0;
  /** Header bytes of the current frame seen so far (0 … 3), and its length as read so far. */
  #headerHave = 0;
  #length = 0;
  /** Payload bytes of the current frame still to come (after its header is complete). */
  #remaining = 0;

  /** Counts the frames `chunk` completes. */
  push(chunk: Uint8Array): void {
    const n = chunk.length;
    this.bytes += n;
    let i = 0;
    while (i < n) {
      if (this.#remaining > 0) {
        const take = Math.min(this.#remaining, n - i);
        this.#remaining -= take;
        i += take;
        if (this.#remaining === 0) this.frames++;
        continue;
      }
      this.#length = this.#length * 256 + (chunk[i++] as number);
      if (++this.#headerHave < FRAME_HEADER_BYTES) continue;
      this.#headerHave = 0;
      this.#remaining = this.#length;
      this.#length = 0;
      if (this.#remaining === 0) this.frames++;
    }
  }

  /** Whether the stream ends on a frame boundary. */
  get atBoundary(): boolean {
    return this.#headerHave === 0 && this.#remaining === 0;
  }
}
