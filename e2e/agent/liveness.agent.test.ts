/**
 * `/livez` of a real `tessera agent` process whose apply really hangs (issue 12, "Liveness
 * that means something").
 *
 * The agent programs a network namespace of its own (`gt-…`) against a real kube-apiserver.
 * Its PATH starts with a directory holding an `iptables-nft-restore` that blocks while a flag
 * file exists and otherwise runs the real one, so a restore can be made to hang at will. With
 * `--liveness-timeout 2`: an apply stuck past 2 s turns /livez to 503 naming the dataplane;
 * letting the restore through finishes the apply and /livez is 200 again.
 *
 * No wall-clock assertions: every wait is on an observable condition (/readyz, /livez, the
 * agent's sent/applied generations) with a deadline.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { podToWorkloadEndpoint } from '../../src/convert/workload-endpoint-builder.ts';
import { ControlPlane, locateBinaries, pollUntil } from '../controlplane/index.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { REPO_ROOT } from '../runner/processes.ts';

const NODE = 'gt-node';
const LIVENESS_TIMEOUT_S = 2;

let controlPlane: ControlPlane | undefined;
let agent: ChildProcess | undefined;
let port = 0;
const dir = mkdtempSync(join(tmpdir(), 'gt-liveness-'));
const netns = `gt-${randomBytes(3).toString('hex')}`;
const flag = join(dir, 'block-restore');
const unregister = registerExitCleanup(() => {
  agent?.kill('SIGKILL');
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
  } catch {
    // Not created, or already gone.
  }
  rmSync(dir, { recursive: true, force: true });
});

/** An `iptables-nft-restore` that waits while `flag` exists, then runs the real one. */
function writeBlockingRestore(binDir: string): void {
  const real = execFileSync('sh', ['-c', 'command -v iptables-nft-restore'], { encoding: 'utf8' }).trim();
  const script = join(binDir, 'iptables-nft-restore');
  writeFileSync(script, `#!/bin/sh\nwhile [ -e '${flag}' ]; do sleep 0.05; done\nexec '${real}' "$@"\n`);
  chmodSync(script, 0o755);
}

async function get(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: await res.text() };
}

async function generations(): Promise<{ sent: number; applied: number }> {
  const { body } = await get('/metrics');
  const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1] ?? NaN);
  return { sent: value('tessera_agent_sent_generation'), applied: value('tessera_agent_applied_generation') };
}

beforeAll(async () => {
  const binaries = locateBinaries();
  controlPlane = await ControlPlane.start({ binaries });
  const { kubeconfigPath } = controlPlane.connection;
  execFileSync(binaries.kubectl, ['--kubeconfig', kubeconfigPath, 'apply', '-f', join(REPO_ROOT, 'crds')], { stdio: 'pipe' });
  execFileSync(binaries.kubectl, ['--kubeconfig', kubeconfigPath, 'wait', '--for', 'condition=established', '--timeout=60s', 'crd', '--all'], { stdio: 'pipe' });

  execFileSync('ip', ['netns', 'add', netns]);
  execFileSync('ip', ['netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up']);
  const binDir = join(dir, 'bin');
  execFileSync('mkdir', ['-p', binDir]);
  writeBlockingRestore(binDir);

  const args = ['--import', 'tsx', 'src/cli/main.ts', 'agent', '--node', NODE, '--netns', netns, '--kubeconfig', kubeconfigPath, '--metrics-port=0', '--metrics-host=127.0.0.1'];
  args.push('--iptables-backend', 'nft', '--liveness-timeout', String(LIVENESS_TIMEOUT_S));
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PATH: `${binDir}:${process.env['PATH'] ?? ''}` } });
  agent = child;
  let output = '';
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`tessera agent exited with ${code} before serving:\n${output}`)));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      if (!line.includes('serving /metrics')) return;
      const p = (JSON.parse(line) as { port?: number }).port;
      if (p !== undefined) resolve(p);
    });
  });
  await pollUntil(async () => ((await get('/readyz')).status === 200 ? true : undefined), { description: 'the agent to be ready', timeoutMs: 60_000 });
}, 180_000);

afterAll(async () => {
  rmSync(flag, { force: true });
  if (agent !== undefined && agent.exitCode === null) {
    const exited = new Promise((resolve) => agent!.once('exit', resolve));
    agent.kill('SIGTERM');
    const kill = setTimeout(() => agent?.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(kill);
  }
  await controlPlane?.stop();
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
  } catch {
    // Not created.
  }
  rmSync(dir, { recursive: true, force: true });
  unregister();
});

describe('tessera agent /livez (real process, real control plane, an apply that really hangs)', () => {
  it(`an apply stuck longer than --liveness-timeout ${LIVENESS_TIMEOUT_S} turns /livez 503 naming the dataplane; 200 again once it completes`, async () => {
    expect(await get('/livez')).toEqual({ status: 200, body: 'ok' });

    // Hold every iptables restore, then give the agent something to write: an endpoint on its node.
    writeFileSync(flag, '');
    const wep = podToWorkloadEndpoint({ metadata: { name: 'p1', namespace: 'default' }, spec: { nodeName: NODE }, status: { phase: 'Running', podIP: '10.69.0.5' } })!;
    const before = await generations();
    await controlPlane!.connection.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'projectcalico.org',
      version: 'v3',
      namespace: 'default',
      plural: 'workloadendpoints',
      body: { ...wep, spec: { ...wep.spec, interfaceName: 'caligt0' } },
    });

    const stuck = await pollUntil(
      async () => {
        const r = await get('/livez');
        return r.status === 503 ? r : undefined;
      },
      { description: '/livez to fail while the restore is held', timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(stuck.body).toMatch(new RegExp(`^stuck: dataplane: no progress for \\d+\\.\\d s \\(timeout ${LIVENESS_TIMEOUT_S} s\\)$`));
    // The endpoint's batch was handed to the driver and is not applied: the apply is what hangs.
    const held = await generations();
    expect(held.sent).toBeGreaterThan(before.sent);
    expect(held.applied).toBeLessThan(held.sent);
    expect(agent?.exitCode).toBeNull();

    unlinkSync(flag);
    await pollUntil(
      async () => {
        const g = await generations();
        return g.applied === g.sent && g.sent >= held.sent ? true : undefined;
      },
      { description: 'the held apply to complete', timeoutMs: 60_000, intervalMs: 100 },
    );
    await pollUntil(async () => ((await get('/livez')).status === 200 ? true : undefined), { description: '/livez to recover', timeoutMs: 30_000 });
    expect(await get('/livez')).toEqual({ status: 200, body: 'ok' });
    const rules = execFileSync('ip', ['netns', 'exec', netns, 'iptables-nft-save', '-t', 'filter'], { encoding: 'utf8' });
    expect(rules).toMatch(/caligt0/);
  });
});
