import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ControlPlane } from '../controlplane/control-plane.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import type { ControlPlaneRecord } from '../controlplane/control-plane-record.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { isProcessGroupAlive } from '../controlplane/process-group.ts';
import { REPO_ROOT, sharedControlPlane } from './shared-control-plane.ts';
import { isEvent, WatchRecorder } from './watch-recorder.ts';

// These tests restart, compact and kill control planes, so they use their own instead of
// the run's shared one.

function configMaps(kc: KubeConfig): CoreV1Api {
  return kc.makeApiClient(CoreV1Api);
}

async function createConfigMap(kc: KubeConfig, name: string, value: string): Promise<string> {
  const cm = await configMaps(kc).createNamespacedConfigMap({
    namespace: 'default',
    body: { metadata: { name }, data: { value } },
  });
  return cm.metadata?.resourceVersion as string;
}

async function readConfigMapValue(kc: KubeConfig, name: string): Promise<string | undefined> {
  const cm = await configMaps(kc).readNamespacedConfigMap({ namespace: 'default', name });
  return cm.data?.value;
}

/**
 * The inodes of the LISTEN sockets on `url`'s port, read from /proc/net/tcp{,6}. A connect()
 * probe would be flaky here: on loopback, connecting to a free port in the ephemeral range can
 * pick that very port as its source and "succeed" by TCP self-connect.
 */
function listeningSockets(url: string): Set<string> {
  const hexPort = Number(new URL(url).port).toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // fields[1] = local "ADDR:PORT" (hex), fields[3] = state (0A = LISTEN), fields[9] = inode.
      if (fields[3] === '0A' && fields[1]?.endsWith(`:${hexPort}`) && fields[9] !== undefined) inodes.add(fields[9]);
    }
  }
  return inodes;
}

/**
 * The control plane's listening sockets, taken while it runs. Comparing sockets rather than
 * port numbers afterwards matters: the ports come from the ephemeral range and the test
 * projects run concurrently (agents, other control planes), so once freed, a number may
 * legitimately be handed to someone else; only the same socket surviving is a leak.
 */
function controlPlaneSockets(record: ControlPlaneRecord): Set<string> {
  const sockets = new Set([...listeningSockets(record.server), ...listeningSockets(record.etcdUrl)]);
  // etcd and kube-apiserver each listen at least once.
  expect(sockets.size).toBeGreaterThanOrEqual(2);
  return sockets;
}

/** Nothing of `record` remains: no live process group, no directory, none of `sockets`. */
async function expectNothingLeft(record: ControlPlaneRecord, sockets: Set<string>): Promise<void> {
  await pollUntil(
    () =>
      [record.pids.etcd, record.pids.kubeApiserver].every((pid) => pid === null || !isProcessGroupAlive(pid))
        ? true
        : undefined,
    { description: `processes ${JSON.stringify(record.pids)} to be gone`, timeoutMs: 15_000 },
  );
  expect(existsSync(record.tempDir)).toBe(false);
  expect(existsSync(record.etcdDataDir)).toBe(false);
  // A socket can stay LISTEN for a moment after its last process is reaped, held by no
  // process at all: the kernel may finish the exiting task's file release asynchronously
  // (delayed fput). Such a socket goes away by itself; one held by a live process never does.
  const survivors = (): string[] => {
    const now = new Set([...listeningSockets(record.server), ...listeningSockets(record.etcdUrl)]);
    return [...sockets].filter((inode) => now.has(inode));
  };
  await pollUntil(() => (survivors().length === 0 ? true : undefined), {
    description: "the control plane's listening sockets to close",
    timeoutMs: 15_000,
  }).catch((e: unknown) => {
    const open = survivors();
    throw new Error(`listening sockets ${JSON.stringify(open)} outlived the control plane, held by ${JSON.stringify(socketHolders(open))}`, { cause: e });
  });
}

/** Who holds these socket inodes: pid, parent, process group and command line, from /proc. */
function socketHolders(inodes: readonly string[]): Array<{ pid: number; ppid: number; pgid: number; cmd: string }> {
  if (inodes.length === 0) return [];
  const wanted = new Set(inodes.map((i) => `socket:[${i}]`));
  const holders: Array<{ pid: number; ppid: number; pgid: number; cmd: string }> = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const fds = readdirSync(`/proc/${pid}/fd`);
      if (!fds.some((fd) => wanted.has(readlinkSync(`/proc/${pid}/fd/${fd}`)))) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [, , ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').slice(0, 200);
      holders.push({ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), cmd });
    } catch {
      // Gone while we looked, or a descriptor closed under us.
    }
  }
  return holders;
}

describe('ControlPlane restarts and compaction (private control plane)', () => {
  let controlPlane: ControlPlane;

  beforeAll(async () => {
    controlPlane = await ControlPlane.start({ binaries: sharedControlPlane().binaries });
  });

  afterAll(async () => {
    await controlPlane?.stop();
  });

  it("a connected client's next call succeeds after restartApiserver()", async () => {
    const kc = controlPlane.connection.kubeConfig;
    await createConfigMap(kc, 'before-apiserver-restart', 'kept');
    const pidBefore = controlPlane.record().pids.kubeApiserver;

    await controlPlane.restartApiserver();

    expect(controlPlane.record().pids.kubeApiserver).not.toBe(pidBefore);
    expect(await readConfigMapValue(kc, 'before-apiserver-restart')).toBe('kept');
    await createConfigMap(kc, 'after-apiserver-restart', 'new');
    expect(await readConfigMapValue(kc, 'after-apiserver-restart')).toBe('new');
  });

  it('a watch open across restartApiserver() ends; resuming from its last resourceVersion continues or says 410 Expired', async () => {
    const kc = controlPlane.connection.kubeConfig;
    const listed = await configMaps(kc).listNamespacedConfigMap({ namespace: 'default' });
    const path = '/api/v1/namespaces/default/configmaps';
    const watch = await WatchRecorder.start(kc, path, { resourceVersion: listed.metadata?.resourceVersion });
    const lastSeen = await createConfigMap(kc, 'seen-before-restart', '1');
    await watch.next('ADDED seen-before-restart', isEvent('ADDED', 'seen-before-restart'));

    await controlPlane.restartApiserver();

    await watch.ended();
    await using resumed = await WatchRecorder.start(kc, path, { resourceVersion: lastSeen });
    await createConfigMap(kc, 'created-after-restart', '2');
    const first = await resumed.next(
      'ADDED created-after-restart, or an ERROR',
      (e) => e.type === 'ERROR' || isEvent('ADDED', 'created-after-restart')(e),
    );
    if (first.type === 'ERROR') {
      // The new kube-apiserver's watch cache starts at etcd's current revision, which its own
      // start-up writes may have moved past lastSeen: the client must relist (what informers do).
      expect(first.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
      const relisted = await configMaps(kc).listNamespacedConfigMap({ namespace: 'default' });
      expect(relisted.items.map((cm) => cm.metadata?.name)).toEqual(
        expect.arrayContaining(['seen-before-restart', 'created-after-restart']),
      );
      await using rewatch = await WatchRecorder.start(kc, path, { resourceVersion: relisted.metadata?.resourceVersion });
      await createConfigMap(kc, 'created-after-relist', '3');
      await rewatch.next('ADDED created-after-relist', isEvent('ADDED', 'created-after-relist'));
    } else {
      expect(resumed.events.filter(isEvent('ADDED', 'seen-before-restart'))).toEqual([]);
    }
  });

  it("a connected client's next call succeeds after restartEtcd(), and etcd kept its data", async () => {
    const kc = controlPlane.connection.kubeConfig;
    await createConfigMap(kc, 'before-etcd-restart', 'kept');
    const pidBefore = controlPlane.record().pids.etcd;

    await controlPlane.restartEtcd();

    expect(controlPlane.record().pids.etcd).not.toBe(pidBefore);
    expect(await readConfigMapValue(kc, 'before-etcd-restart')).toBe('kept');
    await createConfigMap(kc, 'after-etcd-restart', 'new');
    expect(await readConfigMapValue(kc, 'after-etcd-restart')).toBe('new');
  });

  it('after compactEtcd(), an exact list at an older resourceVersion fails with 410 Gone', async () => {
    const kc = controlPlane.connection.kubeConfig;
    const oldRevision = await createConfigMap(kc, 'before-compaction', 'v1');
    await configMaps(kc).patchNamespacedConfigMap({
      namespace: 'default',
      name: 'before-compaction',
      body: [{ op: 'replace', path: '/data/value', value: 'v2' }],
    });
    // Before compaction the old revision is still readable.
    const exactBefore = await configMaps(kc).listNamespacedConfigMap({
      namespace: 'default',
      resourceVersion: oldRevision,
      resourceVersionMatch: 'Exact',
    });
    expect(exactBefore.metadata?.resourceVersion).toBe(oldRevision);

    const compactedAt = await controlPlane.compactEtcd();

    expect(compactedAt).toBeGreaterThan(Number(oldRevision));
    const failure = await configMaps(kc)
      .listNamespacedConfigMap({ namespace: 'default', resourceVersion: oldRevision, resourceVersionMatch: 'Exact' })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(ApiException);
    expect((failure as ApiException<unknown>).code).toBe(410);
    expect(await readConfigMapValue(kc, 'before-compaction')).toBe('v2');
  });

  it('stop() kills both process groups, removes every temp dir and frees the ports; a second stop() is a no-op', async () => {
    const record = controlPlane.record();
    expect(isProcessGroupAlive(record.pids.etcd as number)).toBe(true);
    expect(isProcessGroupAlive(record.pids.kubeApiserver as number)).toBe(true);
    expect(existsSync(record.tempDir)).toBe(true);

    const sockets = controlPlaneSockets(record);
    await controlPlane.stop();
    await controlPlane.stop();

    await expectNothingLeft(record, sockets);
  });
});

describe('compaction and watches (private control plane, --watch-cache=false)', () => {
  let controlPlane: ControlPlane;

  beforeAll(async () => {
    controlPlane = await ControlPlane.start({
      binaries: sharedControlPlane().binaries,
      // With the watch cache on, kube-apiserver serves watches from its own event window and
      // etcd compaction does not expire them; off, watches read etcd directly.
      apiserverArgs: ['--watch-cache=false'],
    });
  });

  afterAll(async () => {
    await controlPlane?.stop();
  });

  it('after compactEtcd(), a watch from a compacted resourceVersion gets ERROR 410 Expired and ends', async () => {
    const kc = controlPlane.connection.kubeConfig;
    const oldRevision = await createConfigMap(kc, 'watched', 'v1');
    // Two more writes, so the watch's start (oldRevision + 1) lies strictly below the
    // compaction revision. Starting exactly at it is allowed by etcd, but the previous value
    // is gone and kube-apiserver answers 500 "etcd event received with PrevKv=nil".
    for (const value of ['v2', 'v3']) {
      await configMaps(kc).patchNamespacedConfigMap({
        namespace: 'default',
        name: 'watched',
        body: [{ op: 'replace', path: '/data/value', value }],
      });
    }

    await controlPlane.compactEtcd();

    await using watch = await WatchRecorder.start(kc, '/api/v1/namespaces/default/configmaps', {
      resourceVersion: oldRevision,
    });
    const error = await watch.next('ERROR', (e) => e.type === 'ERROR');
    expect(error.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
    expect(await watch.ended()).toEqual({ err: null });
    expect(watch.events.filter((e) => e.type === 'MODIFIED')).toEqual([]);
  });
});

describe('a control plane whose owner process ends without calling stop()', () => {
  // A private temp root, so reapOrphans() in the SIGKILL test can only touch this suite's.
  let tempRoot: string;
  let unregister: () => void;
  beforeAll(() => {
    tempRoot = mkdtempSync(join(tmpdir(), 'tessera-lifecycle-'));
    unregister = registerExitCleanup(() => rmSync(tempRoot, { recursive: true, force: true }));
  });
  afterAll(() => {
    rmSync(tempRoot, { recursive: true, force: true });
    unregister();
  });

  /** Starts hold-control-plane.ts in a child Node process and returns it with its record. */
  async function startHolder(): Promise<{ pid: number; record: ControlPlaneRecord; exited: Promise<NodeJS.Signals | number | null> }> {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(REPO_ROOT, 'e2e/integration/fixtures/hold-control-plane.ts'), JSON.stringify(sharedControlPlane().binaries), tempRoot],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? code)),
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const line = await pollUntil(
      () => {
        if (child.exitCode !== null) throw new Error(`holder exited ${child.exitCode}: ${stderr}`);
        return stdout.includes('\n') ? stdout.slice(0, stdout.indexOf('\n')) : undefined;
      },
      { description: 'hold-control-plane.ts to print its record', timeoutMs: 90_000 },
    );
    return { pid: child.pid as number, record: JSON.parse(line) as ControlPlaneRecord, exited };
  }

  it.each(['SIGINT', 'SIGTERM'] as const)('on %s it takes etcd and kube-apiserver down with it and dies of that signal', async (signal) => {
    const holder = await startHolder();
    expect(holder.record.ownerPid).toBe(holder.pid);
    expect(isProcessGroupAlive(holder.record.pids.kubeApiserver as number)).toBe(true);

    const sockets = controlPlaneSockets(holder.record);
    process.kill(holder.pid, signal);

    expect(await holder.exited).toBe(signal);
    await expectNothingLeft(holder.record, sockets);
  });

  it('after SIGKILL (uncatchable) the next ControlPlane.start() under the same temp root reaps the orphans', async () => {
    const holder = await startHolder();

    const sockets = controlPlaneSockets(holder.record);
    process.kill(holder.pid, 'SIGKILL');
    expect(await holder.exited).toBe('SIGKILL');
    expect(isProcessGroupAlive(holder.record.pids.etcd as number)).toBe(true);

    await using next = await ControlPlane.start({ binaries: sharedControlPlane().binaries, tempRoot });

    await expectNothingLeft(holder.record, sockets);
    expect(next.record().tempDir.startsWith(tempRoot)).toBe(true);
  });
});
