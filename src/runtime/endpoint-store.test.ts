import { describe, expect, it } from 'vitest';

import { EndpointStore, type AddressWords } from './endpoint-store.ts';

const v6 = (a: number, b: number, c: number, d: number): AddressWords => [a, b, c, d];

describe('EndpointStore', () => {
  it('maps IPv4 and IPv6 addresses to the id that claimed them', () => {
    const s = new EndpointStore();
    const a = s.allocate();
    const b = s.allocate();
    s.claim(a, 0x0a000001);
    s.claim(a, v6(0xfd000000, 0, 0, 1));
    s.claim(b, 0x0a000002);
    expect(s.idOf(0x0a000001)).toBe(a);
    expect(s.idOf(v6(0xfd000000, 0, 0, 1))).toBe(a);
    expect(s.idOf(0x0a000002)).toBe(b);
    expect(s.idOf(0x0a000003)).toBe(-1);
    expect(s.idOf(v6(0xfd000000, 0, 0, 2))).toBe(-1);
    expect(s.addressCount).toBe(3);
  });

  it('the last claim wins, and releasing frees only the addresses still mapped to the id', () => {
    const s = new EndpointStore();
    const a = s.allocate();
    const b = s.allocate();
    s.claim(a, 0x0a000001);
    s.claim(a, v6(1, 2, 3, 4));
    s.claim(b, 0x0a000001);
    expect(s.idOf(0x0a000001)).toBe(b);
    s.release(a);
    expect(s.idOf(0x0a000001)).toBe(b);
    expect(s.idOf(v6(1, 2, 3, 4))).toBe(-1);
    s.release(b);
    expect(s.idOf(0x0a000001)).toBe(-1);
    expect(s.addressCount).toBe(0);
  });

  it('reuses released ids before growing, and a reused id starts with no addresses', () => {
    const s = new EndpointStore();
    const ids = [s.allocate(), s.allocate(), s.allocate()];
    s.claim(ids[1]!, 0x0a000009);
    s.release(ids[1]!);
    expect(s.size).toBe(2);
    const again = s.allocate();
    expect(again).toBe(ids[1]);
    expect(s.capacity).toBe(3);
    expect(s.idOf(0x0a000009)).toBe(-1);
    s.claim(again, 0x0a00000a);
    s.unclaimAll(again);
    expect(s.idOf(0x0a00000a)).toBe(-1);
    s.claim(again, 0x0a00000a);
    expect(s.idOf(0x0a00000a)).toBe(again);
  });

  it('holds the extremes: 0.0.0.0, 255.255.255.255 and a second IPv4 address', () => {
    const s = new EndpointStore();
    const a = s.allocate();
    s.claim(a, 0);
    s.claim(a, 0xffffffff);
    s.claim(a, 0x0a000001);
    for (const x of [0, 0xffffffff, 0x0a000001]) expect(s.idOf(x)).toBe(a);
    s.release(a);
    for (const x of [0, 0xffffffff, 0x0a000001]) expect(s.idOf(x)).toBe(-1);
  });

  it('grows past its initial tables and stays consistent through many deletions (backward shift)', () => {
    const s = new EndpointStore();
    const n = 20_000;
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const id = s.allocate();
      ids.push(id);
      s.claim(id, (0x0a000000 + i * 7919) >>> 0);
      if (i % 10 === 0) s.claim(id, v6(0xfd000000, 0, i, 1));
    }
    for (let i = 0; i < n; i += 2) s.release(ids[i]!);
    for (let i = 0; i < n; i++) {
      const want = i % 2 === 0 ? -1 : ids[i];
      expect(s.idOf((0x0a000000 + i * 7919) >>> 0)).toBe(want);
      if (i % 10 === 0) expect(s.idOf(v6(0xfd000000, 0, i, 1))).toBe(-1);
    }
    expect(s.size).toBe(n / 2);
    expect(s.addressCount).toBe(n / 2);
    // Re-adding reuses every freed id; nothing grows.
    for (let i = 0; i < n; i += 2) s.claim(s.allocate(), (0x0b000000 + i) >>> 0);
    expect(s.capacity).toBe(n);
    for (let i = 0; i < n; i += 2) expect(s.idOf((0x0b000000 + i) >>> 0)).toBeGreaterThanOrEqual(0);
  });
});
