/**
 * `tessera validate` and `tessera explain` on policies whose tier does not exist: the examples
 * without their Tier `security` (examples/00-tier-security.yaml).
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runExplain } from './explain.ts';
import { capture } from './testdata/capture.ts';
import { runValidate } from './validate.ts';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

describe('a policy in a tier that does not exist', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tp-missing-tier-'));
    cpSync(EXAMPLES, dir, { recursive: true, filter: (src) => path.basename(src) !== '00-tier-security.yaml' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('tessera validate warns on spec.tier of each such policy, and still exits 0', async () => {
    const r = await capture(runValidate, ['-f', dir]);
    expect(r.code).toBe(0);
    const warnings = r.stdout.split('\n').filter((l) => l.includes('spec.tier'));
    expect(warnings).toEqual([
      'warning: GlobalNetworkPolicy security.block-metadata: spec.tier: tier "security" does not exist: the policy is enforced in a tier ordered after every existing tier (kube-baseline included), with defaultAction Deny, until that Tier is created (no such Tier among the inputs)',
      'warning: GlobalNetworkPolicy security.allow-monitoring: spec.tier: tier "security" does not exist: the policy is enforced in a tier ordered after every existing tier (kube-baseline included), with defaultAction Deny, until that Tier is created (no such Tier among the inputs)',
    ]);
  });

  it('tessera validate says nothing about a policy in a default tier or in a Tier among the inputs', async () => {
    const r = await capture(runValidate, ['-f', EXAMPLES]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('spec.tier');
  });

  it('tessera explain notes each such policy and marks its tier in the walk; the Allow in it no longer decides', async () => {
    const r = await capture(runExplain, ['-f', dir, '--from', 'monitoring/prometheus', '--to', 'shop/api', '--port', '9090']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('note: GlobalNetworkPolicy security.allow-monitoring: tier "security" does not exist: the policy is enforced in a tier ordered after every existing tier');
    const walk = r.stdout.split('\n');
    const at = walk.findIndex((l) => l.trim() === 'tier security (defaultAction Deny)');
    expect(walk[at + 1]?.trim()).toBe('(no Tier security exists: ordered after every existing tier, defaultAction Deny)');
    // With the Tier, security.allow-monitoring allows this flow (simulate.test.ts); without it,
    // the default tier decides first.
    expect(walk[0]).toBe('monitoring/prometheus → shop/api TCP/9090: DENIED');
    expect(r.stdout).toContain('ingress of shop/api (10.65.1.11 on node-1): denied at the end of tier default');
  });
});
