import { describe, expect, it } from 'vitest';

import { encodeFrame } from '../src/typha/frame-codec.ts';
import { FrameCounter } from './typha-frame-counter.ts';

const stream = Buffer.concat([encodeFrame(Buffer.from('hello')), encodeFrame(Buffer.alloc(0)), encodeFrame(Buffer.alloc(70_000, 7)), encodeFrame(Buffer.from('x'))]);

describe('FrameCounter', () => {
  it('counts the frames of a stream pushed whole', () => {
    const c = new FrameCounter();
    c.push(stream);
    expect([c.frames, c.bytes, c.atBoundary]).toEqual([4, stream.length, true]);
  });

  it('counts the same however the stream is split: one byte at a time, across headers, and at random cuts', () => {
    for (const size of [1, 2, 3, 5, 4096]) {
      const c = new FrameCounter();
      for (let i = 0; i < stream.length; i += size) c.push(stream.subarray(i, i + size));
      expect([c.frames, c.bytes, c.atBoundary]).toEqual([4, stream.length, true]);
    }
    const c = new FrameCounter();
    let seed = 7;
    for (let i = 0; i < stream.length; ) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const end = Math.min(stream.length, i + 1 + (seed % 9000));
      c.push(stream.subarray(i, end));
      i = end;
    }
    expect(c.frames).toBe(4);
  });

  it('a frame cut inside its header or payload is not counted until complete', () => {
    const c = new FrameCounter();
    c.push(stream.subarray(0, 2));
    expect([c.frames, c.atBoundary]).toEqual([0, false]);
    c.push(stream.subarray(2, 7));
    expect([c.frames, c.atBoundary]).toEqual([0, false]);
    c.push(stream.subarray(7, 9));
    expect([c.frames, c.atBoundary]).toEqual([1, true]);
  });
});
