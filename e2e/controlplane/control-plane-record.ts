import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { isProcessGroupAlive, stopProcessGroup } from './process-group.ts';

/**
 * What a running control plane leaves on disk so that another process can find and stop it:
 * `cli.ts down` for one started by `cli.ts up`, and {@link reapOrphans} for one whose owner
 * died without cleaning up (SIGKILL cannot be caught).
 */
export interface ControlPlaneRecord {
  readonly format: 1;
  readonly kubernetesVersion: string;
  /** The Node process that stops it, or null when detached (`cli.ts up`). */
  readonly ownerPid: number | null;
  readonly tempDir: string;
  readonly etcdDataDir: string;
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly etcdUrl: string;
  /** kubeControllerManager: absent in records written before it existed, null when not run. */
  readonly pids: { readonly etcd: number | null; readonly kubeApiserver: number | null; readonly kubeControllerManager?: number | null };
  readonly startedAt: string;
}

/** File name of the record inside the control plane's temp dir. */
export const RECORD_FILE = 'control-plane.json';
/** Prefix of every control plane temp dir (under os.tmpdir()) and etcd dir (under /dev/shm). */
export const TEMP_PREFIX = 'tessera-cp-';
export const ETCD_PREFIX = 'tessera-etcd-';

export function writeRecord(file: string, record: ControlPlaneRecord): void {
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
}

export function readRecord(file: string): ControlPlaneRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneRecord;
    return record.format === 1 ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops the processes of `record` (only if the pid still runs the expected program, so a
 * recycled pid is never signalled) and removes its directories.
 */
export async function destroyRecorded(record: ControlPlaneRecord, graceMs = 5_000): Promise<void> {
  // Clients of kube-apiserver first, then it, so none logs connection errors while it shuts down.
  for (const [pid, program] of [
    [record.pids.kubeControllerManager ?? null, 'kube-controller-manager'],
    [record.pids.kubeApiserver, 'kube-apiserver'],
    [record.pids.etcd, 'etcd'],
  ] as const) {
    if (pid !== null && runsProgram(pid, program)) await stopProcessGroup(pid, graceMs);
  }
  rmSync(record.etcdDataDir, { recursive: true, force: true });
  rmSync(record.tempDir, { recursive: true, force: true });
}

/** Whether any recorded process of `record` is still running its program. */
export function isRecordAlive(record: ControlPlaneRecord): boolean {
  return (
    (record.pids.etcd !== null && runsProgram(record.pids.etcd, 'etcd')) ||
    (record.pids.kubeApiserver !== null && runsProgram(record.pids.kubeApiserver, 'kube-apiserver'))
  );
}

/**
 * Removes control planes under `tempRoot` whose owning Node process is gone (it was SIGKILLed
 * or crashed before its exit handler ran). Detached ones (ownerPid null) are left to
 * `cli.ts down`. Returns the temp dirs it removed.
 */
export async function reapOrphans(tempRoot: string): Promise<string[]> {
  const reaped: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(tempRoot).filter((name) => name.startsWith(TEMP_PREFIX));
  } catch {
    return reaped;
  }
  for (const name of entries) {
    const record = readRecord(join(tempRoot, name, RECORD_FILE));
    if (record === undefined || record.ownerPid === null || isPidAlive(record.ownerPid)) continue;
    await destroyRecorded(record);
    reaped.push(record.tempDir);
  }
  return reaped;
}

function isPidAlive(pid: number): boolean {
  return isProcessGroupAlive(pid) || existsProcess(pid);
}

function existsProcess(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function runsProgram(pid: number, program: string): boolean {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    return (argv0.split('/').pop() ?? '') === program && isProcessGroupAlive(pid);
  } catch {
    return false;
  }
}
