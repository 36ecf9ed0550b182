/**
 * The exit-status scheme (exit-status.ts) held by all five user tools, each through its run
 * function: what cannot be read is exit 3 with the reason on stderr and nothing on stdout;
 * an invalid object is an error unless --skip-invalid.
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runConvert } from './convert.ts';
import { EXIT_FAILED, EXIT_INPUT } from './exit-status.ts';
import { runExplain } from './explain.ts';
import { runRender } from './render.ts';
import { runSimulate } from './simulate.ts';
import { capture } from './testdata/capture.ts';
import { runValidate } from './validate.ts';

type Run = Parameters<typeof capture>[0];

/** Each command with the arguments it needs besides its input. */
const COMMANDS: ReadonlyArray<{ name: string; run: Run; args: (input: string[]) => string[] }> = [
  { name: 'simulate', run: runSimulate, args: (input) => input },
  { name: 'explain', run: runExplain, args: (input) => [...input, '--from', 'shop/a', '--to', 'shop/b', '--port', '80'] },
  { name: 'render', run: runRender, args: (input) => ['--node', 'node-1', ...input] },
  { name: 'validate', run: runValidate, args: (input) => input },
  { name: 'convert', run: runConvert, args: (input) => input },
];
const CLUSTER_COMMANDS = COMMANDS.filter((c) => ['simulate', 'explain', 'render'].includes(c.name));

const SHOP = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop, labels: {app: a}}
spec: {nodeName: node-1}
status: {phase: Running, podIP: 10.65.0.1, podIPs: [{ip: 10.65.0.1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: shop, labels: {app: b}}
spec: {nodeName: node-1}
status: {phase: Running, podIP: 10.65.0.2, podIPs: [{ip: 10.65.0.2}]}
`;

/** One invalid object each tool reads: a Calico policy (a range written "80-90") and a Kubernetes one (a label key that is no selector). */
const INVALID = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  selector: app == 'b'
  ingress: [{action: Allow, protocol: TCP, destination: {ports: ["80-90"]}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: shop}
spec:
  podSelector: {matchLabels: {"bad key": x}}
`;

let dir: string;
const at = (name: string): string => path.join(dir, name);

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tessera-exit-'));
  writeFileSync(at('shop.yaml'), SHOP);
  writeFileSync(at('invalid.yaml'), INVALID);
  writeFileSync(at('broken.yaml'), 'kind: Tier\nmetadata:\n  name: b\n   order: 2\n');
  // Unreadable for every user, root included (tests run as root): a link to itself.
  symlinkSync('loop.yaml', at('loop.yaml'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(COMMANDS)('tessera $name: input it cannot use is exit 3 with the reason on stderr', ({ name, run, args }) => {
  it('a missing path', async () => {
    const r = await capture(run, args(['-f', at('shop.yaml'), '-f', at('missing')]));
    expect(r).toMatchObject({ code: EXIT_INPUT });
    expect(r.stderr).toContain(`tessera ${name}: ${at('missing')}: no such file or directory (ENOENT)\n`);
    if (name !== 'validate') expect(r.stdout).toBe('');
  });

  it('an unreadable file', async () => {
    const r = await capture(run, args(['-f', at('loop.yaml')]));
    expect(r.code).toBe(EXIT_INPUT);
    expect(r.stderr).toContain(`tessera ${name}: ${at('loop.yaml')}: too many symbolic links encountered (ELOOP)\n`);
  });

  it('a YAML syntax error, with file, line and column', async () => {
    const r = await capture(run, args(['-f', at('broken.yaml')]));
    expect(r.code).toBe(EXIT_INPUT);
    expect(r.stderr).toContain(`tessera ${name}: ${at('broken.yaml')}:3:9: invalid YAML: Nested mappings are not allowed in compact mappings\n`);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  });
});

describe('an invalid object is an error naming the object and field path, unless --skip-invalid', () => {
  const CALICO_LINE = 'NetworkPolicy shop/web: spec.ingress[0].destination.ports[0]: "80-90" is not a port or a range (use "80:90")';

  it.each(CLUSTER_COMMANDS)('tessera $name: exit 3 naming both objects; with --skip-invalid notes and the answer', async ({ name, run, args }) => {
    const input = ['-f', at('shop.yaml'), '-f', at('invalid.yaml')];
    const r = await capture(run, args(input));
    expect(r.code).toBe(EXIT_INPUT);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`tessera ${name}: ${CALICO_LINE}\n`);
    expect(r.stderr).toMatch(new RegExp(`^tessera ${name}: networking\\.k8s\\.io/v1 NetworkPolicy shop/db \\(as NetworkPolicy shop/knp\\.default\\.db\\): spec\\.selector: `, 'm'));

    const skipped = await capture(run, args([...input, '--skip-invalid']));
    expect(skipped.code).toBe(0);
    expect(skipped.stdout).not.toBe('');
    expect(skipped.stderr).toContain('note: NetworkPolicy shop/web: invalid, enforced fail-closed as the agent would (no rules: the endpoints it selects are denied in its directions): spec.ingress[0].destination.ports[0]');
    expect(skipped.stderr).toContain('note: networking.k8s.io/v1 NetworkPolicy shop/db (as NetworkPolicy shop/knp.default.db): invalid, enforced fail-closed');
  });

  it('tessera explain --skip-invalid: the invalid policies deny, and the walk names their errors', async () => {
    const r = await capture(runExplain, ['-f', at('shop.yaml'), '-f', at('invalid.yaml'), '--skip-invalid', '--from', 'shop/a', '--to', 'shop/b', '--port', '80']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('shop/a → shop/b TCP/80: DENIED');
    expect(r.stdout).toContain('    NetworkPolicy shop/web\n      (invalid, enforced fail-closed with no rules: spec.ingress[0].destination.ports[0]: "80-90" is not a port or a range (use "80:90"))');
    expect(r.stdout).toMatch(/end of tier default: defaultAction Deny → DROP\n {4}\(reached because of the fail-closed stand-in of invalid NetworkPolicy shop\/knp\.default\.db, NetworkPolicy shop\/web\)/);
    const json = await capture(runExplain, ['-f', at('shop.yaml'), '-f', at('invalid.yaml'), '--skip-invalid', '--from', 'shop/a', '--to', 'shop/b', '--port', '80', '--output', 'json']);
    expect(Object.keys((JSON.parse(json.stdout) as { failClosed: object }).failClosed)).toEqual(['NetworkPolicy shop/knp.default.db', 'NetworkPolicy shop/web']);
  });

  it('tessera validate: exit 1 (its answer), naming the object and path; with --skip-invalid a note and exit 0', async () => {
    const r = await capture(runValidate, ['-f', at('invalid.yaml')]);
    expect(r.code).toBe(EXIT_FAILED);
    expect(r.stdout).toContain(`${CALICO_LINE}\n`);
    const skipped = await capture(runValidate, ['-f', at('invalid.yaml'), '--skip-invalid']);
    expect(skipped.code).toBe(0);
    expect(skipped.stdout).toContain(`note: ${at('invalid.yaml')} (document 1): skipped ${CALICO_LINE.replace('web: ', 'web: invalid: ')}\n`);
  });

  it('tessera convert: exit 3 naming the policy, its source and the converted field; with --skip-invalid a note and exit 0', async () => {
    const r = await capture(runConvert, ['-f', at('invalid.yaml')]);
    expect(r.code).toBe(EXIT_INPUT);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(`^tessera convert: ${at('invalid.yaml').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(document 2\\): NetworkPolicy shop/db \\(as knp\\.default\\.db\\): spec\\.selector: expected operator`, 'm'),
    );
    const skipped = await capture(runConvert, ['-f', at('invalid.yaml'), '--skip-invalid']);
    expect(skipped.code).toBe(0);
    expect(skipped.stderr).toContain('note: NetworkPolicy shop/db (as knp.default.db): invalid, skipped: spec.selector: ');
  });
});

describe.each(CLUSTER_COMMANDS)('tessera $name --kubeconfig', ({ name, run, args }) => {
  /** A port on loopback that nothing listens on: bound by the kernel's choice, then closed. */
  async function closedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }

  it('an unreachable API server is exit 3 naming the server and the first kind', async () => {
    const port = await closedPort();
    const server = `https://127.0.0.1:${port}`;
    const kubeconfig = at(`kubeconfig-${name}`);
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const r = await capture(run, args(['--kubeconfig', kubeconfig]));
    expect(r).toEqual({
      code: EXIT_INPUT,
      stdout: '',
      stderr: `tessera ${name}: cannot list v1 Namespace from ${server}: API server unreachable: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    });
  });

  it('a kubeconfig that is missing or not YAML is exit 3 naming the file (and line and column)', async () => {
    const missing = await capture(run, args(['--kubeconfig', at('no-kubeconfig')]));
    expect(missing).toMatchObject({ code: EXIT_INPUT, stderr: `tessera ${name}: ${at('no-kubeconfig')}: no such file or directory (ENOENT)\n` });
    const broken = await capture(run, args(['--kubeconfig', at('broken.yaml')]));
    expect(broken).toMatchObject({ code: EXIT_INPUT, stderr: `tessera ${name}: ${at('broken.yaml')}:3:9: invalid YAML: Nested mappings are not allowed in compact mappings\n` });
  });
});
