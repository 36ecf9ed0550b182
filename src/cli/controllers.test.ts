import { afterEach, describe, expect, it, vi } from 'vitest';

import { runControllers } from './controllers.ts';

describe('tessera controllers: arguments', () => {
  afterEach(() => vi.restoreAllMocks());

  it('--help prints usage and exits 0', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await runControllers(['--help'])).toBe(0);
    expect(String(out.mock.calls[0]?.[0])).toMatch(/--no-workload-endpoints/);
  });

  it.each([[['--bogus']], [['--metrics-port', 'x']], [['--lease-duration=1']], [['--kubeconfig']], [['--workload-interface-naming', 'cni']], [['--auto-host-endpoints', 'on']], [['--auto-host-endpoints']]])(
    '%j is a usage error (exit 2)',
    async (argv) => {
      const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      expect(await runControllers(argv)).toBe(2);
      expect(String(err.mock.calls[0]?.[0])).toMatch(/^tessera controllers: /);
    },
  );

  it('--auto-host-endpoints is documented, and AUTO_HOST_ENDPOINTS (Calico\'s variable) is read as it: enabled or disabled, any case, else refused', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await runControllers(['--help'])).toBe(0);
    expect(String(out.mock.calls[0]?.[0])).toMatch(/--auto-host-endpoints <enabled\|disabled>[\s\S]*default\s+\$AUTO_HOST_ENDPOINTS, else disabled/);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    vi.stubEnv('AUTO_HOST_ENDPOINTS', 'yes');
    try {
      expect(await runControllers([])).toBe(2);
    } finally {
      vi.unstubAllEnvs();
    }
    expect(String(err.mock.calls[0]?.[0])).toContain('--auto-host-endpoints must be enabled or disabled, not "yes"');
  });
});
