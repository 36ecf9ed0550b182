/**
 * The kind cluster's scripts and binaries for TypeScript callers (the `kind` test project and
 * the kind figures): they wrap e2e/kind/*.sh, which stay the one recipe (`make kind-up`, …).
 * Every script's progress goes to `log` line by line; a failing script throws with its last
 * output lines.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const exec = promisify(execFile);

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = join(REPO_ROOT, 'e2e', 'kind');

export const KIND_CLUSTER = process.env['TESSERA_KIND_CLUSTER'] ?? 'tessera';
const CACHE = join(process.env['TESSERA_CACHE'] ?? join(homedir(), '.cache', 'tessera'), 'kind');
export const KUBE_VERSION = readFileSync(join(HERE, 'VERSION'), 'utf8').trim();
export const TESSERA_VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** What make kind-up writes, and what everything here talks to. */
export const KIND_KUBECONFIG = join(CACHE, `${KIND_CLUSTER}.kubeconfig`);
/** kubectl of the cluster's Kubernetes version (e2e/kind/build-kube.sh). */
export const KIND_KUBECTL = join(CACHE, KUBE_VERSION, 'bin', 'kubectl');
/** The image reference manifests/ name (deploy.sh loads localhost/tessera:<v> under it). */
export const MANIFEST_IMAGE = /^\s*image:\s*(\S+)/m.exec(readFileSync(join(REPO_ROOT, 'manifests', '40-agent.yaml'), 'utf8'))?.[1] ?? '';

/** Runs `bash <script> …` from the repository root; resolves with its stdout. */
export async function script(path: string, args: readonly string[] = [], log: (line: string) => void = () => undefined, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const child = spawn('bash', [join(REPO_ROOT, path), ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  const tail: string[] = [];
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  readline.createInterface({ input: child.stderr }).on('line', (line) => {
    log(line);
    tail.push(line);
    if (tail.length > 20) tail.shift();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`${path} ${args.join(' ')} exited ${code}:\n${tail.join('\n')}`);
  return stdout;
}

/** kubectl against the kind cluster; resolves with stdout. */
export async function kubectl(args: readonly string[], timeoutMs = 300_000): Promise<string> {
  const { stdout } = await exec(KIND_KUBECTL, ['--kubeconfig', KIND_KUBECONFIG, ...args], { maxBuffer: 64 << 20, timeout: timeoutMs });
  return stdout;
}

/** Runs `args` in the node container `node`; resolves with stdout. */
export async function onNode(node: string, args: readonly string[]): Promise<string> {
  const { stdout } = await exec(process.env['KIND_EXPERIMENTAL_PROVIDER'] ?? 'podman', ['exec', node, ...args], { maxBuffer: 64 << 20 });
  return stdout;
}

/** Tags the local image `from` as `as` and loads it onto every node (`kind load image-archive`). */
export async function loadImage(from: string, as: string): Promise<void> {
  const conf = { CONTAINERS_CONF: join(REPO_ROOT, 'images', 'containers.conf') };
  await exec('podman', ['tag', from, as], { env: { ...process.env, ...conf } });
  const dir = mkdtempSync(join(tmpdir(), 'tessera-kind-load-'));
  try {
    const archive = join(dir, 'image.tar');
    await exec('podman', ['save', '--quiet', '--format', 'docker-archive', '-o', archive, as], { env: { ...process.env, ...conf } });
    const kind = (await script('e2e/kind/build-kind.sh')).trim().split('\n').pop() ?? 'kind';
    await exec(kind, ['load', 'image-archive', archive, '--name', KIND_CLUSTER], {
      env: { ...process.env, CONTAINERS_CONF: join(HERE, 'containers.conf'), KIND_EXPERIMENTAL_PROVIDER: process.env['KIND_EXPERIMENTAL_PROVIDER'] ?? 'podman' },
      maxBuffer: 16 << 20,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
