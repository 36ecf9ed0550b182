/**
 * Developer commands for a long-lived local control plane (wired as `make cluster-up` /
 * `make cluster-down`):
 *
 *   npx tsx e2e/controlplane/cli.ts up      build if needed, start (with kube-controller-manager's
 *                                           EndpointSlice controller), detach; prints `export KUBECONFIG=…`
 *   npx tsx e2e/controlplane/cli.ts down    stop it and remove its files
 *   npx tsx e2e/controlplane/cli.ts status  print what is recorded and whether it is up
 *
 * State lives in `$HOME/.cache/tessera/cluster/` (state.json, kubeconfig). Everything but the
 * final `export` line goes to stderr, so `eval "$(npx tsx e2e/controlplane/cli.ts up)"` works.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { ensureBinaries, kubernetesVersion, tesseraCacheDir } from './binaries.ts';
import { destroyRecorded, isRecordAlive, readRecord, writeRecord } from './control-plane-record.ts';
import { ControlPlane } from './control-plane.ts';

const USAGE = 'usage: npx tsx e2e/controlplane/cli.ts up|down|status';

const stateDir = join(tesseraCacheDir(), 'cluster');
const stateFile = join(stateDir, 'state.json');
const kubeconfigPath = join(stateDir, 'kubeconfig');

async function up(): Promise<void> {
  const existing = readRecord(stateFile);
  if (existing !== undefined) {
    if (isRecordAlive(existing)) {
      log(`cluster already running: ${existing.server} (kube-apiserver pid ${existing.pids.kubeApiserver}, etcd pid ${existing.pids.etcd})`);
      console.log(`export KUBECONFIG=${existing.kubeconfigPath}`);
      return;
    }
    log('removing a stale cluster record (its processes are gone)');
    await destroyRecorded(existing);
    rmSync(stateFile, { force: true });
  }
  const binaries = await ensureBinaries({ onBuildOutput: (line) => log(line) });
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  // The EndpointSlice controller, as the scenario runner starts its own control plane with, so
  // `npm run e2e -- --kubeconfig` on this cluster gives Services their slices too.
  const controlPlane = new ControlPlane({ binaries, kubeconfigPath, controllers: ['endpointslice'] });
  const { server } = await controlPlane.start();
  const record = controlPlane.detach();
  writeRecord(stateFile, record);
  log(
    `kube-apiserver ${kubernetesVersion()} ready at ${server} in ${Math.round(controlPlane.timings?.totalMs ?? 0)} ms\n` +
      `  etcd ${record.etcdUrl} (pid ${record.pids.etcd}), kube-apiserver pid ${record.pids.kubeApiserver}\n` +
      `  logs: ${join(record.tempDir, 'logs')}\n` +
      `  kubectl: ${binaries.kubectl}\n` +
      '  stop with: make cluster-down (npx tsx e2e/controlplane/cli.ts down)',
  );
  console.log(`export KUBECONFIG=${kubeconfigPath}`);
}

async function down(): Promise<void> {
  const record = readRecord(stateFile);
  if (record === undefined) {
    log(`no cluster recorded in ${stateFile}; nothing to stop`);
    return;
  }
  await destroyRecorded(record);
  rmSync(stateFile, { force: true });
  rmSync(record.kubeconfigPath, { force: true });
  log(`stopped ${record.server} and removed ${record.tempDir}, ${record.etcdDataDir}`);
}

function status(): void {
  const record = readRecord(stateFile);
  if (record === undefined) {
    log('no cluster recorded');
    process.exitCode = 1;
    return;
  }
  const alive = isRecordAlive(record);
  console.log(JSON.stringify({ ...record, alive }, null, 2));
  if (!alive) process.exitCode = 1;
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

const command = process.argv[2];
try {
  switch (command) {
    case 'up':
      await up();
      break;
    case 'down':
      await down();
      break;
    case 'status':
      status();
      break;
    default:
      log(USAGE);
      process.exitCode = 2;
  }
} catch (err) {
  log(`cli.ts ${command ?? ''}: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
// Detached children are unref'd and write to files; nothing here should hold the loop open,
// but do not let a stray handle turn `up` into a command that never returns.
process.exit();
