/**
 * Length-delimited framing of Typha's byte stream (typha.md §10: "any length-delimited framing
 * works"): every frame is a 4-byte big-endian payload length followed by the payload.
 *
 * Invariants:
 * - a frame's payload is at most `maxFrameBytes`; the decoder rejects a larger length prefix as
 *   soon as it has read the 4 bytes, before buffering any of the payload, so a garbage or hostile
 *   prefix (up to 4 GiB) costs nothing;
 * - the decoder never throws: every malformed input is a `FrameError` value the connection
 *   handler turns into a close with a logged reason, and after an error the decoder stays
 *   failed (a byte stream cannot be resynchronised once a length is wrong);
 * - frames come out in order, whatever the chunking of the input (one byte at a time or many
 *   frames per chunk).
 */

/** 4-byte big-endian length prefix. */
export const FRAME_HEADER_BYTES = 4;

/**
 * Default largest payload: 64 MiB. A message holds ≤ 100 KVs; a NetworkPolicy value can be
 * hundreds of KiB, so this leaves room for 100 very large policies while bounding what one
 * peer can make the other buffer.
 */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

export type FrameErrorReason = 'oversized' | 'truncated';

/** A framing failure; `reason` is stable for logs and metrics, `message` names the numbers. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
  constructor(
    readonly reason: FrameErrorReason,
    message: string,
  ) {
    super(message);
  }
}

/** Prefixes `payload` with its length. Throws a RangeError for a payload over `maxFrameBytes` (a bug on the sending side). */
export function encodeFrame(payload: Uint8Array, maxFrameBytes = DEFAULT_MAX_FRAME_BYTES): Buffer {
  if (payload.length > maxFrameBytes) {
    throw new RangeError(`encodeFrame: payload of ${payload.length} bytes exceeds the maximum frame size ${maxFrameBytes}`);
  }
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  out.writeUInt32BE(payload.length, 0);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

export type DecodeResult = { readonly frames: Buffer[]; readonly error?: undefined } | { readonly frames: Buffer[]; readonly error: FrameError };

/**
 * Incremental decoder. `push` returns the frames completed by a chunk (and possibly an error
 * after them: the frames before the bad one are still valid and returned); `end` reports a
 * stream that stopped inside a frame.
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #failed: FrameError | undefined;

  constructor(opts: { maxFrameBytes?: number } = {}) {
    const { maxFrameBytes = DEFAULT_MAX_FRAME_BYTES } = opts;
    if (!(Number.isInteger(maxFrameBytes) && maxFrameBytes > 0 && maxFrameBytes <= 0xffffffff)) {
      throw new RangeError(`FrameDecoder: maxFrameBytes must be an integer in [1, 2^32-1], got ${maxFrameBytes}`);
    }
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Bytes received and not yet returned as frames. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): DecodeResult {
    if (this.#failed !== undefined) return { frames: [], error: this.#failed };
    if (chunk.length > 0) {
      this.#chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
      this.#buffered += chunk.length;
    }
    const frames: Buffer[] = [];
    while (this.#buffered >= FRAME_HEADER_BYTES) {
      const length = this.#peekLength();
      if (length > this.#maxFrameBytes) {
        this.#failed = new FrameError('oversized', `frame length ${length} exceeds the maximum frame size ${this.#maxFrameBytes}`);
        this.#chunks = [];
        this.#buffered = 0;
        return { frames, error: this.#failed };
      }
      if (this.#buffered < FRAME_HEADER_BYTES + length) break;
      const all = this.#take(FRAME_HEADER_BYTES + length);
      frames.push(all.subarray(FRAME_HEADER_BYTES));
    }
    return { frames };
  }

  /** The stream ended: an error if it stopped inside a frame (or the decoder had failed). */
  end(): FrameError | undefined {
    if (this.#failed !== undefined) return this.#failed;
    if (this.#buffered === 0) return undefined;
    const expected = this.#buffered >= FRAME_HEADER_BYTES ? ` of ${FRAME_HEADER_BYTES + this.#peekLength()}` : '';
    this.#failed = new FrameError('truncated', `stream ended inside a frame after ${this.#buffered}${expected} bytes`);
    return this.#failed;
  }

  #peekLength(): number {
    const first = this.#chunks[0] as Buffer;
    if (first.length >= FRAME_HEADER_BYTES) return first.readUInt32BE(0);
    return this.#take(FRAME_HEADER_BYTES, false).readUInt32BE(0);
  }

  /** The first `n` buffered bytes as one Buffer; consumed unless `consume` is false. */
  #take(n: number, consume = true): Buffer {
    const first = this.#chunks[0] as Buffer;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
    } else {
      out = Buffer.allocUnsafe(n);
      let filled = 0;
      for (const c of this.#chunks) {
        const k = Math.min(c.length, n - filled);
        c.copy(out, filled, 0, k);
        filled += k;
        if (filled === n) break;
      }
    }
    if (!consume) return out;
    // A multi-chunk frame was copied above; drop the bytes it consumed from the chunk list.
    let left = n;
    while (left > 0) {
      const c = this.#chunks[0] as Buffer;
      if (c.length <= left) {
        this.#chunks.shift();
        left -= c.length;
      } else {
        this.#chunks[0] = c.subarray(left);
        left = 0;
      }
    }
    this.#buffered -= n;
    return out;
  }
}
