import { describe, expect, it } from 'vitest';
import { Interner } from './interner.ts';

describe('Interner', () => {
  it('returns one frozen copy per distinct label map, list and string', () => {
    const i = new Interner();
    const a = i.labels({ app: 'web', tier: 'fe' });
    const b = i.labels(JSON.parse('{"app":"web","tier":"fe"}') as Record<string, string>);
    expect(b).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
    expect(a).toEqual({ app: 'web', tier: 'fe' });
    expect(i.labels({ app: 'web', tier: 'be' })).not.toBe(a);
    expect(i.labels({})).toBe(i.labels({}));
    expect(i.strings(['kns.a', 'ksa.a.default'])).toBe(i.strings(['kns.a', 'ksa.a.default']));
    expect(i.strings(['kns.a'])).not.toBe(i.strings(['kns.b']));
    const port = (port: number): { name: string; port: number } => ({ name: 'http', port });
    const key = (p: { name: string; port: number }): string => `${p.name}/${p.port}`;
    expect(i.list('port', [port(80)], key)).toBe(i.list('port', [port(80)], key));
    expect(i.list('port', [port(80)], key)).toEqual([port(80)]);
    // A list of another type with the same keys is another list.
    expect(i.list('other', [port(80)], key)).not.toBe(i.list('port', [port(80)], key));
    expect(i.strings(['http/80'])).not.toBe(i.list('port', [port(80)], key));
  });

  it('is bounded: a full table is dropped, and what it returned stays valid', () => {
    const i = new Interner({ maxEntries: 2 });
    const first = i.labels({ n: '1' });
    i.labels({ n: '2' });
    i.labels({ n: '3' });
    expect(i.labels({ n: '1' })).not.toBe(first);
    expect(first).toEqual({ n: '1' });
  });
});
