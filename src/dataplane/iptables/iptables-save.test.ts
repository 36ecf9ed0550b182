import { describe, expect, it } from 'vitest';
import { parseSave } from './iptables-save.ts';

describe('parseSave', () => {
  it('extracts hashes of owned chains and our rules in kernel chains, ignoring the rest', () => {
    const text = [
      '*filter',
      ':INPUT ACCEPT [0:0]',
      ':FORWARD ACCEPT [0:0]',
      ':cali-x - [0:0]',
      ':cali-empty - [0:0]',
      ':DOCKER - [0:0]',
      '-A FORWARD -j DOCKER',
      '-A FORWARD -m comment --comment "cali:AAAAAAAAAAAAAAAA" -j cali-x',
      '-A cali-x -p tcp -m comment --comment "cali:BBBBBBBBBBBBBBBB" -j DROP',
      '-A cali-x -j ACCEPT',
      '-A DOCKER -j RETURN',
      'COMMIT',
    ].join('\n');
    const { owned, kernel } = parseSave(text, new Set(['FORWARD', 'INPUT']));
    expect([...owned]).toEqual([
      ['cali-x', ['BBBBBBBBBBBBBBBB', '']],
      ['cali-empty', []],
    ]);
    expect(kernel.get('FORWARD')!.hashes).toEqual(['AAAAAAAAAAAAAAAA']);
    expect(kernel.get('INPUT')!.hashes).toEqual([]);
    expect(kernel.has('DOCKER')).toBe(false);
  });
});
