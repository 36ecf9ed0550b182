/**
 * Messages over a socket, both directions: `MessageReader` turns received bytes into validated
 * messages (frames → optional decompression → `decodeMessage`), `MessageWriter` turns messages
 * into written frames (with the connection's compression) under a per-write timeout.
 *
 * Ordering guarantees, which the decoder-restart protocol (compression.ts) relies on:
 * - the reader hands over one message at a time and waits for the handler (sync or async)
 *   before decoding the next frame, so a handler that calls `restart()` on a `decoder-restart`
 *   switches the decoder for exactly the frames after that message;
 * - the writer performs `send`, `sendFrames` and `restart` strictly in call order, so a restart
 *   takes effect for exactly the messages queued after it.
 * Failure is sticky on both sides: after the first error nothing more is read or written, and
 * the owner closes the connection with the error's message as the logged reason.
 */
import type { Socket } from 'node:net';

import type { Clock, Timer } from '../runtime/clock.ts';
import { CompressionError, StreamCompressor, StreamDecompressor, type CompressionAlgorithm } from './compression.ts';
import { encodeFrame, FrameDecoder, FrameError } from './frame-codec.ts';
import { decodeMessage, encodeMessage, MessageDecodeError, ProtocolViolationError, type Message } from './messages.ts';

/** What can go wrong reading: all of it is the peer's (or the network's) fault. */
export type ReadError = FrameError | MessageDecodeError | CompressionError;

/** `sendFrames` writes consecutive frames together (one writev) up to this many bytes. */
const CORK_BYTES = 256 * 1024;

/** Frames queued beyond this pause the socket until the handler catches up. */
const READ_QUEUE_HIGH_WATER = 256;
const READ_QUEUE_LOW_WATER = 64;

export interface MessageReaderOptions {
  readonly clock: Clock;
  readonly maxFrameBytes: number;
  readonly maxKVsPerMessage: number;
  onMessage(msg: Message): void | Promise<void>;
  /** Called once, on the first error (a `ReadError`, or what `onMessage` threw); the reader has stopped. */
  onError(err: Error): void;
}

export class MessageReader {
  readonly #socket: Socket;
  readonly #opts: MessageReaderOptions;
  readonly #decoder: FrameDecoder;
  #decompressor: StreamDecompressor | undefined;
  readonly #queue: Buffer[] = [];
  /** When the frame at the head of the queue became due: its arrival, or the end of the previous one. */
  #headSince: number | undefined;
  #pumping = false;
  #stopped = false;

  constructor(socket: Socket, opts: MessageReaderOptions) {
    this.#socket = socket;
    this.#opts = opts;
    this.#decoder = new FrameDecoder({ maxFrameBytes: opts.maxFrameBytes });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
  }

  /**
   * Since when the handler has owed progress (clock ms): the moment the frame now at the head of
   * the queue became due; undefined when every received frame has been handled.
   */
  get pendingSince(): number | undefined {
    return this.#queue.length === 0 ? undefined : this.#headSince;
  }

  /** Frames after the message being handled are `compression` (undefined: plain), from a fresh stream. */
  restart(compression: CompressionAlgorithm | undefined): void {
    this.#decompressor?.close();
    this.#decompressor = compression === undefined ? undefined : new StreamDecompressor(compression, this.#opts.maxFrameBytes);
  }

  /**
   * The peer finished sending: a `FrameError` if it stopped inside a frame. (Frames already
   * queued are still handled.)
   */
  end(): FrameError | undefined {
    return this.#decoder.end();
  }

  stop(): void {
    this.#stopped = true;
    this.#queue.length = 0;
    this.#decompressor?.close();
  }

  #onData(chunk: Buffer): void {
    if (this.#stopped) return;
    const { frames, error } = this.#decoder.push(chunk);
    if (this.#queue.length === 0 && frames.length > 0) this.#headSince = this.#opts.clock.now();
    for (const frame of frames) this.#queue.push(frame);
    if (this.#queue.length > READ_QUEUE_HIGH_WATER) this.#socket.pause();
    if (error !== undefined) {
      // Frames before the bad one are valid, but the connection is going away: report now.
      this.#fail(error);
      return;
    }
    void this.#pump();
  }

  #fail(err: Error): void {
    if (this.#stopped) return;
    this.stop();
    this.#opts.onError(err);
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#stopped && this.#queue.length > 0) {
        const frame = this.#queue[0] as Buffer;
        let msg: Message;
        try {
          const payload = this.#decompressor === undefined ? frame : await this.#decompressor.decompress(frame);
          msg = decodeMessage(payload, { maxKVs: this.#opts.maxKVsPerMessage });
        } catch (err) {
          this.#fail(err instanceof MessageDecodeError || err instanceof CompressionError ? err : new CompressionError(String(err)));
          return;
        }
        if (this.#stopped) return;
        try {
          await this.#opts.onMessage(msg);
        } catch (err) {
          this.#fail(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        this.#queue.shift();
        this.#headSince = this.#opts.clock.now();
        if (this.#queue.length < READ_QUEUE_LOW_WATER && this.#socket.isPaused()) this.#socket.resume();
      }
    } finally {
      this.#pumping = false;
    }
  }
}

/** A write did not complete (drain) within the write timeout (typha.md §2.3: 120 s). */
export class WriteTimeoutError extends Error {
  override readonly name = 'WriteTimeoutError';
}

/** The socket closed while a write was pending or queued. */
export class ConnectionClosedError extends Error {
  override readonly name = 'ConnectionClosedError';
}

export interface MessageWriterOptions {
  readonly clock: Clock;
  readonly writeTimeoutMs: number;
  readonly maxFrameBytes: number;
  /** The "never send what the peer did not announce" guard; a false is a `ProtocolViolationError`. */
  readonly mayBeSent?: (type: Message['type']) => boolean;
  /** Time (ms) each frame took to be accepted by the socket, drain included. */
  readonly onWritten?: (ms: number) => void;
}

export class MessageWriter {
  readonly #socket: Socket;
  readonly #opts: MessageWriterOptions;
  #compressor: StreamCompressor | undefined;
  #algorithm: CompressionAlgorithm | undefined;
  #chain: Promise<void> = Promise.resolve();
  /** Operations queued and not finished. */
  #pending = 0;
  #failed: Error | undefined;

  constructor(socket: Socket, opts: MessageWriterOptions) {
    this.#socket = socket;
    this.#opts = opts;
  }

  /** Encodes, compresses (if restarted with an algorithm) and writes `msg`. */
  send(msg: Message): Promise<void> {
    return this.sendEncoded(msg.type, encodeMessage(msg));
  }

  /** Like `send`, for a message already encoded by `encodeMessage` (shared by several connections). */
  sendEncoded(type: Message['type'], encoded: Buffer): Promise<void> {
    if (this.#opts.mayBeSent !== undefined && !this.#opts.mayBeSent(type)) {
      return Promise.reject(new ProtocolViolationError(`refusing to send a ${type} message the peer did not announce support for`));
    }
    return this.#enqueue(async () => {
      if (this.#compressor === undefined && this.#algorithm !== undefined) this.#compressor = new StreamCompressor(this.#algorithm);
      const payload = this.#compressor === undefined ? encoded : await this.#compressor.compress(encoded);
      await this.#write(encodeFrame(payload, this.#opts.maxFrameBytes));
    });
  }

  /**
   * Writes pre-encoded frames (a shared snapshot, shared delta bytes) as they are: small ones
   * together in one corked (writev) write, a large one on its own, each under the write timeout.
   */
  sendFrames(frames: readonly Buffer[]): Promise<void> {
    return this.#enqueue(async () => {
      let i = 0;
      while (i < frames.length) {
        let j = i;
        let bytes = 0;
        while (j < frames.length && (j === i || bytes + (frames[j] as Buffer).length <= CORK_BYTES)) bytes += (frames[j++] as Buffer).length;
        await this.#write(frames.slice(i, j));
        i = j;
      }
    });
  }

  /**
   * Messages queued after this call go out in a fresh `compression` stream (undefined: plain).
   * The compressor is created by the first message that needs it (a connection on the shared
   * delta stream restarts once per segment and may send nothing of its own in between).
   */
  restart(compression: CompressionAlgorithm | undefined): Promise<void> {
    return this.#enqueue(async () => {
      this.#compressor?.close();
      this.#compressor = undefined;
      this.#algorithm = compression;
    });
  }

  /** Nothing is queued or being written: a `writeNow` goes out after everything sent before. */
  get idle(): boolean {
    return this.#pending === 0;
  }

  /**
   * Writes pre-framed `bytes` (a tick's shared delta bytes) at once, synchronously, without a
   * promise: only for a writer that is `idle`, so the bytes follow everything written before.
   * True when the socket accepted them; false under backpressure (or on a closed socket) — then
   * the queue waits for 'drain' (under the write timeout) before its next operation, so the
   * caller's next queued operation (e.g. `flushed()`) settles once they were accepted, or fails.
   */
  writeNow(bytes: Buffer): boolean {
    if (this.#failed !== undefined) return false;
    const socket = this.#socket;
    if (socket.destroyed) {
      this.#failed = new ConnectionClosedError('connection closed');
      return false;
    }
    const start = this.#opts.clock.now();
    if (socket.write(bytes)) {
      this.#opts.onWritten?.(this.#opts.clock.now() - start);
      return true;
    }
    this.#enqueue(() => this.#drained(start, bytes.length)).catch(() => undefined);
    return false;
  }

  /** Settles once every operation queued before it has: rejects with the writer's failure if any. */
  flushed(): Promise<void> {
    return this.#enqueue(() => Promise.resolve());
  }

  close(): void {
    this.#failed ??= new ConnectionClosedError('connection closed');
    this.#compressor?.close();
  }

  #enqueue(op: () => Promise<void>): Promise<void> {
    this.#pending++;
    const run = async (): Promise<void> => {
      try {
        if (this.#failed !== undefined) throw this.#failed;
        await op();
      } catch (err) {
        this.#failed ??= err as Error;
        throw err;
      } finally {
        this.#pending--;
      }
    };
    const result = this.#chain.then(run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #write(frame: Buffer | readonly Buffer[]): Promise<void> {
    const socket = this.#socket;
    if (socket.destroyed) throw new ConnectionClosedError('connection closed');
    const { clock } = this.#opts;
    const start = clock.now();
    let accepted: boolean;
    if (Buffer.isBuffer(frame)) {
      accepted = socket.write(frame);
    } else if (frame.length === 1) {
      accepted = socket.write(frame[0] as Buffer);
    } else {
      socket.cork();
      for (const f of frame) socket.write(f);
      socket.uncork();
      accepted = !socket.writableNeedDrain;
    }
    if (!accepted) {
      await this.#drained(start, Buffer.isBuffer(frame) ? frame.length : frame.reduce((n, f) => n + f.length, 0));
      return;
    }
    this.#opts.onWritten?.(clock.now() - start);
  }

  /** Waits for the socket to drain bytes written at `start` (under the write timeout), then reports the write's time. */
  async #drained(start: number, bytes: number): Promise<void> {
    const socket = this.#socket;
    const { clock, writeTimeoutMs } = this.#opts;
    if (socket.destroyed) throw new ConnectionClosedError('connection closed');
    if (socket.writableNeedDrain) {
      await new Promise<void>((resolve, reject) => {
        let timer: Timer | undefined = undefined;
        const done = (err?: Error): void => {
          timer?.cancel();
          socket.off('drain', onDrain);
          socket.off('close', onClose);
          if (err === undefined) resolve();
          else reject(err);
        };
        const onDrain = (): void => done();
        const onClose = (): void => done(new ConnectionClosedError('connection closed during a write'));
        socket.on('drain', onDrain);
        socket.on('close', onClose);
        timer = clock.setTimer(() => done(new WriteTimeoutError(`a write of ${bytes} bytes did not complete within ${writeTimeoutMs} ms`)), writeTimeoutMs);
      });
    }
    this.#opts.onWritten?.(clock.now() - start);
  }
}
