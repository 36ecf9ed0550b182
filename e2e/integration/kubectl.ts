import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { KubeConfig } from '@kubernetes/client-node';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';

import { REPO_ROOT, sharedControlPlane } from './shared-control-plane.ts';

/** What a kubectl invocation printed and how it ended. */
export interface KubectlResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options for {@link kubectl}. */
export interface KubectlOptions {
  /** Written to stdin (for `-f -`). @default none */
  readonly stdin?: string;
  /** Kubeconfig file to use. @default the shared control plane's admin kubeconfig */
  readonly kubeconfigPath?: string;
  /**
   * Target this client-node config instead (written to a private temp file for the call), so
   * a helper given a KubeConfig acts on that cluster — e.g. a test's private ControlPlane.
   * Takes precedence over `kubeconfigPath`.
   */
  readonly kubeConfig?: KubeConfig;
  /** Kill it after this long. @default 60_000 */
  readonly timeoutMs?: number;
}

/**
 * Runs the built kubectl against the shared control plane (cwd: the repository root).
 * Never throws for a non-zero exit: tests assert on `code` and `stderr`.
 */
export async function kubectl(args: readonly string[], options: KubectlOptions = {}): Promise<KubectlResult> {
  const { kubeConfig } = options;
  if (kubeConfig === undefined) return run(args, options);
  const dir = mkdtempSync(join(tmpdir(), 'tessera-kubectl-'));
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  const unregister = registerExitCleanup(remove);
  try {
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
    return await run(args, { ...options, kubeconfigPath });
  } finally {
    remove();
    unregister();
  }
}

async function run(args: readonly string[], options: KubectlOptions): Promise<KubectlResult> {
  const shared = sharedControlPlane();
  const { stdin, kubeconfigPath = shared.kubeconfigPath, timeoutMs = 60_000 } = options;
  const child = spawn(shared.binaries.kubectl, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, KUBECONFIG: kubeconfigPath },
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: timeoutMs,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(stdin ?? '');
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  });
  return { code, stdout, stderr };
}

/** Like {@link kubectl}, but throws with kubectl's output when it exits non-zero. */
export async function kubectlOk(args: readonly string[], options: KubectlOptions = {}): Promise<string> {
  const result = await kubectl(args, options);
  if (result.code !== 0) {
    throw new Error(`kubectl ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}
