/**
 * Leadership when the API server stops answering the leader, on the real API server.
 *
 * The leader talks to kube-apiserver through a loopback proxy (stalling-proxy.ts) that, at a
 * moment the test picks, keeps accepting bytes and forwards none: the leader's renew request
 * hangs, as on a half-dead connection. A standby talks to the API server directly.
 *
 * - In-process electors: the leader steps down (isLeader() false, leading signal aborted)
 *   before the standby acquires, its hung requests are aborted (the proxy sees the client
 *   close them), and the Lease's own times show no overlap.
 * - The `tessera controllers` process as the leader: it loses leadership and exits 1 before
 *   the standby acquires, having said so once.
 *
 * Durations are printed, never asserted (tests never assert wall-clock time); what is
 * asserted is order: of events in this process, and of the times the Lease records.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CoreV1Api, RbacAuthorizationV1Api, type V1Lease } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LeaderElector } from '../../src/controllers/leader-election.ts';
import { createRootLogger } from '../../src/runtime/logger.ts';
import { untilAborted } from '../../src/runtime/until-aborted.ts';
import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { kubeConfigFor } from '../controlplane/kubeconfig.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { adminKubeConfig, REPO_ROOT, sharedControlPlane } from './shared-control-plane.ts';
import { StallingProxy } from './stalling-proxy.ts';
import { WatchRecorder } from './watch-recorder.ts';

const WAIT = { timeoutMs: 30_000, intervalMs: 50 };

/** One version of the Lease as the API server stored it. */
interface LeaseVersion {
  holder: string;
  acquired: number;
  renewed: number;
  transitions: number;
}

function leaseVersions(recorder: WatchRecorder): LeaseVersion[] {
  return recorder.events
    .filter((e) => e.type === 'ADDED' || e.type === 'MODIFIED')
    .map((e) => {
      const spec = (e.object as V1Lease).spec ?? {};
      return {
        holder: spec.holderIdentity ?? '',
        acquired: new Date(spec.acquireTime as unknown as string).getTime(),
        renewed: new Date(spec.renewTime as unknown as string).getTime(),
        transitions: spec.leaseTransitions ?? 0,
      };
    });
}

/**
 * Waits until the Lease watch has delivered a version held by `holder`: the acquiring write
 * reaches the watch a moment after the elector itself reports leading.
 */
async function holderSeen(recorder: WatchRecorder, holder: string): Promise<void> {
  await pollUntil(() => (leaseVersions(recorder).some((v) => v.holder === holder) ? true : undefined), {
    description: `a version of the Lease held by ${holder} on the watch`,
    ...WAIT,
  });
}

/** Events in this process, in the order they happened: `at` monotonic, `wall` for comparing with Lease times. */
class Timeline {
  readonly events: Array<{ what: string; at: number; wall: number }> = [];
  note(what: string): void {
    this.events.push({ what, at: performance.now(), wall: Date.now() });
  }
  get(what: string): { what: string; at: number; wall: number } {
    const e = this.events.find((x) => x.what === what);
    if (e === undefined) throw new Error(`no event "${what}" in ${JSON.stringify(this.events.map((x) => x.what))}`);
    return e;
  }
  index(what: string): number {
    return this.events.findIndex((x) => x.what === what);
  }
}

describe('leadership when the API server stops answering the leader', () => {
  const admin = adminKubeConfig();
  const { server, token, caPem } = sharedControlPlane();
  const target = new URL(server);
  const ns = `le-${randomBytes(3).toString('hex')}`;
  const logger = createRootLogger({ level: process.env['TESSERA_TEST_LOG_LEVEL'] ?? 'silent' });
  const proxies: StallingProxy[] = [];
  const stops: AbortController[] = [];
  const runs: Array<Promise<unknown>> = [];
  let dir: string;
  let unregisterDir: () => void;

  const newProxy = async (): Promise<StallingProxy> => {
    const p = await StallingProxy.listen({ host: target.hostname, port: Number(target.port) });
    proxies.push(p);
    return p;
  };
  /**
   * Every version of the Lease from now on (the first event is its current state). Reopened
   * when the API server ends the watch at once with "Too large resource version" (504): its
   * watch cache had not caught up with etcd yet.
   */
  const watchLease = (name: string): Promise<WatchRecorder> =>
    pollUntil(
      async () => {
        const recorder = await WatchRecorder.start(admin, `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, { fieldSelector: `metadata.name=${name}` });
        const first = await recorder.next(`the Lease ${ns}/${name}`, () => true);
        if (first.type === 'ADDED') return recorder;
        recorder.stop();
        throw new Error(`watch opened with ${first.type}: ${JSON.stringify(first.object)}`);
      },
      { description: `a watch on the Lease ${ns}/${name}`, ...WAIT },
    );
  const stopper = (): AbortController => {
    const c = new AbortController();
    stops.push(c);
    return c;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'le-'));
    unregisterDir = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
  });

  afterAll(async () => {
    for (const s of stops) s.abort();
    await Promise.allSettled(runs);
    for (const p of proxies) await p.close();
    await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: ns });
    rmSync(dir, { recursive: true, force: true });
    unregisterDir();
  });

  it('the leader steps down within its renew deadline, its hung requests are aborted, and only then does the standby acquire', async () => {
    const TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
    const name = 'le-in-process';
    const proxy = await newProxy();
    const viaProxy = kubeConfigFor({ server: `https://127.0.0.1:${proxy.port}`, token, user: 'tessera-admin', ...(caPem === null ? {} : { caPem }) });
    const timeline = new Timeline();

    const leader = new LeaderElector({ kubeConfig: viaProxy, namespace: ns, name, identity: 'le-leader', logger, ...TIMING });
    const leaderDone = leader.run(stopper().signal, async (s) => {
      timeline.note('le-leader leads');
      await untilAborted(s);
      timeline.note(`le-leader stopped leading (isLeader=${leader.isLeader()})`);
    });
    runs.push(leaderDone);
    await pollUntil(() => (leader.isLeader() ? true : undefined), { description: 'le-leader to lead', ...WAIT });
    await using lease = await watchLease(name);

    const standby = new LeaderElector({ kubeConfig: admin, namespace: ns, name, identity: 'le-standby', logger, ...TIMING });
    const standbyDone = standby.run(stopper().signal, async (s) => {
      timeline.note('le-standby leads');
      await untilAborted(s);
    });
    runs.push(standbyDone);
    // Renewals work through the proxy: the leader has written the lease three times.
    await pollUntil(() => (leaseVersions(lease).filter((v) => v.holder === 'le-leader').length >= 3 ? true : undefined), {
      description: 'le-leader to renew twice through the proxy',
      ...WAIT,
    });
    expect(standby.isLeader()).toBe(false);

    proxy.stall();
    timeline.note('stall');
    expect(await leaderDone).toBe('lost');
    expect(leader.isLeader()).toBe(false);
    await pollUntil(() => (standby.isLeader() ? true : undefined), { description: 'le-standby to take over', ...WAIT });

    // In this process: the leader had stopped leading before the standby started.
    const steppedDown = timeline.get('le-leader stopped leading (isLeader=false)');
    expect(timeline.index('le-leader stopped leading (isLeader=false)')).toBeLessThan(timeline.index('le-standby leads'));

    // The requests the stall caught were aborted: the leader's side closed each connection.
    const caught = proxy.stalledRequests();
    expect(caught.length).toBeGreaterThan(0);
    await pollUntil(() => (caught.every((c) => c.closedByClient) ? true : undefined), { description: 'the stalled requests to be closed by the leader', ...WAIT });

    // The Lease records one handover from the leader to the standby. That the standby waits a
    // full lease duration after the last renewal is the elector's rule, proven on a fake clock
    // (src/controllers/leader-election.test.ts); here the wall-clock gaps are printed as figures.
    await holderSeen(lease, 'le-standby');
    const versions = leaseVersions(lease);
    const lastByLeader = versions.filter((v) => v.holder === 'le-leader').at(-1)!;
    const firstByStandby = versions.find((v) => v.holder === 'le-standby')!;
    expect(firstByStandby.transitions).toBe(lastByLeader.transitions + 1);

    const stall = timeline.get('stall');
    console.log(
      `stalled leader (lease ${TIMING.leaseDurationMs} ms, renew deadline ${TIMING.renewDeadlineMs} ms, retry ${TIMING.retryPeriodMs} ms): ` +
        `stall → stepped down ${Math.round(steppedDown.at - stall.at)} ms; ` +
        `last stored renewal → stepped down ${steppedDown.wall - lastByLeader.renewed} ms; ` +
        `stepped down → standby's acquireTime ${firstByStandby.acquired - steppedDown.wall} ms; ` +
        `last renewal → standby's acquireTime ${firstByStandby.acquired - lastByLeader.renewed} ms; ` +
        `requests aborted: ${caught.length}`,
    );
  });

  it('`tessera controllers` leading through a stalled connection exits 1, before the standby acquires', async () => {
    const LEASE_SECONDS = 6; // the CLI derives renew deadline 4 s and retry period 0.8 s
    const proxy = await newProxy();
    // An identity that may only use Leases in the test namespace: the process campaigns and
    // leads, but its informers are forbidden, so it never writes to the shared API server.
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'le-lease-only' }, rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }] },
    });
    const identity: ServiceAccountIdentity = await issueServiceAccountToken(admin, {
      namespace: ns,
      serviceAccount: 'le-controllers',
      server: `https://127.0.0.1:${proxy.port}`,
      ...(caPem === null ? {} : { caPem }),
      kubeconfigPath: join(dir, 'le-controllers.kubeconfig'),
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'le-lease-only' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'le-lease-only' },
        subjects: [{ kind: 'ServiceAccount', name: 'le-controllers', namespace: ns }],
      },
    });
    const timeline = new Timeline();

    let logs = '';
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'controllers', '--kubeconfig', identity.kubeconfigPath, '--namespace', ns,
        '--metrics-port', '0', '--metrics-host', '127.0.0.1', '--lease-duration', String(LEASE_SECONDS)],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '', TESSERA_LOG_LEVEL: 'info' } },
    );
    const unregisterChild = registerExitCleanup(() => child.kill('SIGKILL'));
    child.stdout.setEncoding('utf8').on('data', (d: string) => (logs += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (logs += d));
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        timeline.note('process exited');
        resolve(code);
      }),
    );
    try {
      const childIdentity = await pollUntil(() => /"identity":"([^"]+)".*"msg":"became leader"/.exec(logs)?.[1], {
        description: `the controllers process to lead; its output:\n${logs}`,
        ...WAIT,
      });
      await using lease = await watchLease('tessera-controllers');

      const standby = new LeaderElector({
        kubeConfig: admin,
        namespace: ns,
        identity: 'le-standby',
        logger,
        leaseDurationMs: LEASE_SECONDS * 1000,
        renewDeadlineMs: 4_000,
        retryPeriodMs: 800,
      });
      const standbyDone = standby.run(stopper().signal, async (s) => {
        timeline.note('le-standby leads');
        await untilAborted(s);
      });
      runs.push(standbyDone);
      await pollUntil(() => (leaseVersions(lease).filter((v) => v.holder === childIdentity).length >= 3 ? true : undefined), {
        description: 'the process to renew twice through the proxy',
        ...WAIT,
      });
      expect(standby.isLeader()).toBe(false);

      proxy.stall();
      timeline.note('stall');
      expect(await exited).toBe(1);
      await pollUntil(() => (standby.isLeader() ? true : undefined), { description: 'le-standby to take over', ...WAIT });

      // The process was gone before the standby led: nothing it had in flight can land in
      // the standby's term.
      expect(timeline.index('process exited')).toBeLessThan(timeline.index('le-standby leads'));
      const lines = logs.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; time: string; outcome?: string });
      const stepDowns = lines.filter((l) => l.msg.startsWith('stopped leading'));
      expect(stepDowns.map((l) => l.msg)).toEqual(['stopped leading: the lease was not renewed within renewDeadlineMs (4000 ms)']);
      expect(lines.find((l) => l.msg === 'exiting')?.outcome).toBe('lost');

      await holderSeen(lease, 'le-standby');
      const versions = leaseVersions(lease);
      const lastByProcess = versions.filter((v) => v.holder === childIdentity).at(-1)!;
      const firstByStandby = versions.find((v) => v.holder === 'le-standby')!;
      const steppedDownAt = new Date(stepDowns[0]!.time).getTime();
      expect(firstByStandby.transitions).toBe(lastByProcess.transitions + 1);

      const stall = timeline.get('stall');
      console.log(
        `stalled controllers process (lease ${LEASE_SECONDS} s): stall → exit ${Math.round(timeline.get('process exited').at - stall.at)} ms; ` +
          `stall → standby leads ${Math.round(timeline.get('le-standby leads').at - stall.at)} ms; ` +
          `process stepped down → standby's acquireTime ${firstByStandby.acquired - steppedDownAt} ms; ` +
          `last renewal → standby's acquireTime ${firstByStandby.acquired - lastByProcess.renewed} ms (lease ${LEASE_SECONDS * 1000} ms)`,
      );
    } finally {
      child.kill('SIGKILL');
      unregisterChild();
    }
  });
});
