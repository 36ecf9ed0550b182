/**
 * `tessera agent` refuses — one JSON error line naming the reason, exit status 3, no stack
 * trace — when it cannot program the dataplane: iptables/ipset missing, or no NET_ADMIN.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

function agent(env: NodeJS.ProcessEnv, prefix: readonly string[] = []): { status: number | null; lines: Array<Record<string, unknown>>; stderr: string } {
  const argv = [...prefix, process.execPath, '--import', 'tsx', 'src/cli/main.ts', 'agent', '--node', 'n1', '--kubeconfig', '/dev/null', '--metrics-port', '0'];
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd: REPO, env, encoding: 'utf8', timeout: 30_000 });
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { status: r.status, lines, stderr: r.stderr };
}

describe('tessera agent refuses to start when it cannot program the dataplane', () => {
  it('iptables missing from PATH: exit 3 and a logged reason', () => {
    const r = agent({ ...process.env, PATH: '/nonexistent' });
    expect(r.status).toBe(3);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatchObject({ level: 'error', msg: 'refusing to start: cannot program the dataplane' });
    expect(String(r.lines[0]?.['reason'])).toMatch(/iptables-nft-restore is not installed/);
    expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it('no CAP_NET_ADMIN (dropped from the bounding set): exit 3 and a logged reason', () => {
    const r = agent(process.env, ['setpriv', '--bounding-set=-net_admin']);
    expect(r.status).toBe(3);
    expect(String(r.lines[0]?.['reason'])).toMatch(/CAP_NET_ADMIN/);
  });
});
