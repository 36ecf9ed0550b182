import { afterEach, describe, expect, it, vi } from 'vitest';

import { runControllers } from './controllers.ts';

describe('tessera controllers: arguments', () => {
  afterEach(() => vi.restoreAllMocks());

  it('--help prints usage and exits 0', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await runControllers(['--help'])).toBe(0);
    expect(String(out.mock.calls[0]?.[0])).toMatch(/--no-workload-endpoints/);
  });

  it.each([[['--bogus']], [['--metrics-port', 'x']], [['--lease-duration=1']], [['--kubeconfig']], [['--workload-interface-naming', 'cni']]])('%j is a usage error (exit 2)', async (argv) => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(await runControllers(argv)).toBe(2);
    expect(String(err.mock.calls[0]?.[0])).toMatch(/^tessera controllers: /);
  });
});
