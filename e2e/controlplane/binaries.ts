import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Absolute paths of the programs a control plane needs. */
export interface ControlPlaneBinaries {
  readonly kubeApiserver: string;
  /** Runs only when a ControlPlane is asked for controllers (the scenario runner's EndpointSlice controller). */
  readonly kubeControllerManager: string;
  readonly kubectl: string;
  readonly etcd: string;
}

const HERE = fileURLToPath(new URL('.', import.meta.url));

/** e2e/controlplane/build.sh */
export const BUILD_SCRIPT = join(HERE, 'build.sh');

/** The pinned Kubernetes version (e2e/controlplane/VERSION, the one place it is written). */
export function kubernetesVersion(): string {
  return (process.env.TESSERA_KUBE_VERSION ?? readFileSync(join(HERE, 'VERSION'), 'utf8')).trim();
}

/** `$TESSERA_CACHE`, default `$HOME/.cache/tessera` (binaries, Go caches, cluster state). */
export function tesseraCacheDir(): string {
  return process.env.TESSERA_CACHE ?? join(homedir(), '.cache', 'tessera');
}

/** Where build.sh puts kube-apiserver, kube-controller-manager and kubectl for `version`. */
export function binDirFor(version = kubernetesVersion()): string {
  return join(tesseraCacheDir(), 'controlplane', version);
}

/**
 * Finds the binaries without building anything. Overrides: `KUBE_APISERVER_BIN`,
 * `KUBE_CONTROLLER_MANAGER_BIN`, `KUBECTL_BIN`, `ETCD_BIN`; otherwise the Kubernetes ones come
 * from {@link binDirFor} (or `binDir`) and etcd from PATH or /usr/bin/etcd. Throws a message
 * that says how to get what is missing.
 */
export function locateBinaries(binDir = binDirFor()): ControlPlaneBinaries {
  const kubeApiserver = process.env.KUBE_APISERVER_BIN ?? join(binDir, 'kube-apiserver');
  const kubeControllerManager = process.env.KUBE_CONTROLLER_MANAGER_BIN ?? join(binDir, 'kube-controller-manager');
  const kubectl = process.env.KUBECTL_BIN ?? join(binDir, 'kubectl');
  const etcd = process.env.ETCD_BIN ?? findOnPath('etcd') ?? '/usr/bin/etcd';
  const missing = [kubeApiserver, kubeControllerManager, kubectl, etcd].filter((p) => !isExecutable(p));
  if (missing.length > 0) {
    throw new Error(
      `control-plane binaries missing: ${missing.join(', ')}. ` +
        'Build kube-apiserver, kube-controller-manager and kubectl with `bash e2e/controlplane/build.sh` (make controlplane); ' +
        'etcd comes from Debian (`apt-get install etcd-server`) or ETCD_BIN.',
    );
  }
  return { kubeApiserver, kubeControllerManager, kubectl, etcd };
}

/** Options for {@link ensureBinaries}. */
export interface EnsureBinariesOptions {
  /** Receives build.sh's progress output (stderr) line by line. @default discard */
  readonly onBuildOutput?: (line: string) => void;
  readonly signal?: AbortSignal;
}

/**
 * Returns the binaries, running build.sh first when a Kubernetes one is missing
 * (a cold build takes 10–20 minutes on two cores; a warm one is a no-op). build.sh takes a
 * file lock, so concurrent callers build once.
 */
export async function ensureBinaries(options: EnsureBinariesOptions = {}): Promise<ControlPlaneBinaries> {
  const hasOverrides =
    process.env.KUBE_APISERVER_BIN !== undefined && process.env.KUBE_CONTROLLER_MANAGER_BIN !== undefined && process.env.KUBECTL_BIN !== undefined;
  if (!hasOverrides) {
    const binDir = await runBuildScript(options);
    return locateBinaries(binDir);
  }
  return locateBinaries();
}

async function runBuildScript({ onBuildOutput, signal }: EnsureBinariesOptions): Promise<string> {
  const child = spawn('bash', [BUILD_SCRIPT], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(signal === undefined ? {} : { signal }),
  });
  let stdout = '';
  const stderrTail: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  let partial = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      stderrTail.push(line);
      if (stderrTail.length > 40) stderrTail.shift();
      onBuildOutput?.(line);
    }
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  });
  if (code !== 0) {
    throw new Error(
      `bash e2e/controlplane/build.sh failed (exit ${code}); last output:\n${[...stderrTail, partial].join('\n')}`,
    );
  }
  const lastLine = stdout.trimEnd().split('\n').pop();
  if (lastLine === undefined || lastLine === '') throw new Error('build.sh printed no bin dir');
  return lastLine;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}
