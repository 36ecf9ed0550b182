import { describe, expect, it } from 'vitest';
import { Interner } from './interner.ts';

describe('Interner', () => {
  it('returns one frozen copy per distinct string list, and what was held under a key', () => {
    const i = new Interner();
    const a = i.strings(['kns.a', 'ksa.a.default']);
    expect(i.strings(JSON.parse('["kns.a","ksa.a.default"]') as string[])).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(i.strings(['kns.a'])).not.toBe(i.strings(['kns.b']));
    expect(i.strings([])).toBe(i.strings([]));
    expect(i.held('labels', 'app\u0000web')).toBeUndefined();
    const held = i.hold('labels', 'app\u0000web', { app: 'web' });
    expect(Object.isFrozen(held)).toBe(true);
    expect(i.held('labels', 'app\u0000web')).toBe(held);
    // Tags keep tables apart.
    expect(i.held('ports', 'app\u0000web')).toBeUndefined();
    expect(i.string(JSON.parse('"node-1"') as string)).toBe(i.string('node-1'));
  });

  it('is bounded: a full table is dropped, and what it returned stays valid', () => {
    const i = new Interner({ maxEntries: 2 });
    const first = i.strings(['1']);
    i.strings(['2']);
    i.strings(['3']);
    expect(i.strings(['1'])).not.toBe(first);
    expect(first).toEqual(['1']);
  });
});
