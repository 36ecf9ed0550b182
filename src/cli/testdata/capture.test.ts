import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectGolden } from './capture.ts';

let dir: string;
let written: string[];
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tessera-golden-'));
  written = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const golden = (env: Record<string, string>) => ({ dir, env, onWrite: (f: string) => void written.push(path.basename(f)) });

describe('expectGolden', () => {
  it('fails on a missing golden when CI is set, and writes nothing', () => {
    expect(() => expectGolden('new.txt', 'output\n', golden({ CI: 'true' }))).toThrow(/golden .*new\.txt is missing and CI is set/);
    expect(existsSync(path.join(dir, 'new.txt'))).toBe(false);
    expect(written).toEqual([]);
  });

  it('writes a missing golden without CI (or with CI=false), and says so', () => {
    expectGolden('a.txt', 'A\n', golden({}));
    expectGolden('b.txt', 'B\n', golden({ CI: 'false' }));
    expect(readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('A\n');
    expect(written).toEqual(['a.txt', 'b.txt']);
  });

  it('compares with an existing golden, in CI too, and rewrites it only with UPDATE_GOLDEN=1', () => {
    writeFileSync(path.join(dir, 'g.txt'), 'old\n');
    expect(() => expectGolden('g.txt', 'new\n', golden({ CI: 'true' }))).toThrow();
    expect(written).toEqual([]);
    expectGolden('g.txt', 'new\n', golden({ CI: 'true', UPDATE_GOLDEN: '1' }));
    expect(readFileSync(path.join(dir, 'g.txt'), 'utf8')).toBe('new\n');
    expect(written).toEqual(['g.txt']);
  });
});
