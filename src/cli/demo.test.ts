import { describe, expect, it } from 'vitest';
import { runDemo } from './demo.ts';
import { capture, expectGolden } from './testdata/capture.ts';

describe('tessera demo', () => {
  it('prints the shop matrices and one explained denied flow (golden)', async () => {
    const r = await capture((argv, out) => runDemo(argv, out), []);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('shop/frontend → data/db TCP/5432: DENIED');
    expectGolden('demo.txt', r.stdout);
  });
});
