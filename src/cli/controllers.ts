/**
 * `tessera controllers`: the cluster-side controllers (src/controllers/controllers-process.ts)
 * as a long-running process (runtime/daemon.ts) — JSON logs on stdout, /metrics /livez
 * /readyz, leader election, graceful shutdown on SIGTERM/SIGINT (the lease is released so the
 * standby takes over at once). Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else
 * in-cluster. Exits 1 when leadership is lost, so the pod restarts and campaigns again.
 */
import { readFileSync } from 'node:fs';

import { KubeConfig } from '@kubernetes/client-node';

import { startControllers } from '../controllers/controllers-process.ts';
import { WORKLOAD_INTERFACE_NAMINGS, type WorkloadInterfaceNaming } from '../convert/workload-endpoint-builder.ts';
import { runDaemon } from '../runtime/daemon.ts';
import { createRootLogger } from '../runtime/logger.ts';
import { intFlag, oneOf, parseFlags, readCommandLine, switchFlag, textFlag, textFlagOr, usage, valueFlag, type FlagValues } from './args.ts';

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** Calico's values of AUTO_HOST_ENDPOINTS (kube-controllers runconfig.go; case-insensitive, anything else refused). */
const AUTO_HOST_ENDPOINT_SETTINGS = ['enabled', 'disabled'] as const;

/** The controllers' flags: the one declaration their parsing and their usage come from. */
const FLAGS = {
  kubeconfig: textFlag('--kubeconfig', '<file>', 'kubeconfig to use', { env: 'KUBECONFIG', defaultText: '$KUBECONFIG, else in-cluster' }),
  namespace: textFlag('--namespace', '<ns>', 'namespace of the leader-election Lease', { env: 'POD_NAMESPACE', defaultText: '$POD_NAMESPACE, else the in-cluster namespace, else tessera-system' }),
  metricsPort: intFlag('--metrics-port', '<n>', 'port for /metrics, /livez, /readyz', 9094, { min: 0 }, { defaultText: '9094; 0 picks one' }),
  metricsHost: textFlagOr('--metrics-host', '<addr>', 'address to listen on', '0.0.0.0'),
  workloadEndpoints: switchFlag('--no-workload-endpoints', 'do not write WorkloadEndpoints for pods (Calico CNI clusters)', true, false),
  workloadInterfaceNaming: valueFlag<WorkloadInterfaceNaming | undefined>(
    '--workload-interface-naming',
    '<calico|none>',
    "none: endpoints name no interface, each agent finds it from the pod's host route (any CNI; set the agents' --interface-prefix to match); calico: cali + 11 hex of sha1(<ns>.<pod>), as Calico's CNI names host veths",
    undefined,
    (t) => oneOf('--workload-interface-naming', t, WORKLOAD_INTERFACE_NAMINGS),
    { defaultText: 'none' },
  ),
  autoHostEndpoints: valueFlag<boolean>(
    '--auto-host-endpoints',
    '<enabled|disabled>',
    "enabled: keep a HostEndpoint <node>-auto-hep (interface \"*\", the node's labels and addresses, profile projectcalico-default-allow) for every Node; " +
      'disabled: delete the ones made (labelled projectcalico.org/created-by: calico-kube-controllers). In Calico, KubeControllersConfiguration autoCreate, which Tessera does not have',
    false,
    (t) => oneOf('--auto-host-endpoints', t.toLowerCase(), AUTO_HOST_ENDPOINT_SETTINGS) === 'enabled',
    { env: 'AUTO_HOST_ENDPOINTS', defaultText: '$AUTO_HOST_ENDPOINTS, else disabled' },
  ),
  leaseDurationSeconds: intFlag('--lease-duration', '<seconds>', 'the leader-election lease (renew deadline 2/3 of it, retry period 2/15)', 15, { min: 3 }),
  sweepIntervalSeconds: intFlag('--sweep-interval', '<seconds>', 'orphan sweep period', 300, { min: 1 }),
  writesPerSecond: intFlag('--api-writes-per-second', '<n>', 'global throttle on API writes', 50, { min: 1 }),
};

const USAGE = usage({ synopsis: 'tessera controllers [options]' }, FLAGS);

type Options = FlagValues<typeof FLAGS>;

function parseControllersArgs(argv: readonly string[]): Options | 'help' {
  const parsed = parseFlags(argv, FLAGS);
  return parsed === 'help' ? 'help' : parsed.values;
}

function leaseNamespace(o: Options): string {
  if (o.namespace !== undefined) return o.namespace;
  try {
    return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim();
  } catch {
    return 'tessera-system';
  }
}

export async function runControllers(argv: readonly string[]): Promise<number> {
  const line = readCommandLine('controllers', USAGE, () => parseControllersArgs(argv));
  if ('exitCode' in line) return line.exitCode;
  const opts = line.options;
  const log = createRootLogger();
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();

  const leaseMs = opts.leaseDurationSeconds * 1000;
  const outcome = await runDaemon(
    { logger: log, metricsPort: opts.metricsPort, metricsHost: opts.metricsHost, shutdownMessage: 'shutting down' },
    ({ registry, signal }) => {
      const running = startControllers(
        {
          kubeConfig,
          leaseNamespace: leaseNamespace(opts),
          workloadEndpoints: opts.workloadEndpoints,
          autoHostEndpoints: opts.autoHostEndpoints,
          ...(opts.workloadInterfaceNaming === undefined ? {} : { workloadInterfaceNaming: opts.workloadInterfaceNaming }),
          leaseDurationMs: leaseMs,
          renewDeadlineMs: Math.round((leaseMs * 2) / 3),
          retryPeriodMs: Math.round((leaseMs * 2) / 15),
          sweepIntervalMs: opts.sweepIntervalSeconds * 1000,
          writesPerSecond: opts.writesPerSecond,
          registry,
          logger: log,
        },
        signal,
      );
      return { ready: running.ready, live: running.live, servingFields: { identity: running.identity }, run: () => running.done };
    },
    (outcome) => ({ outcome }),
  );
  if (outcome === 'lost') {
    // Exit now, as client-go's callers do in OnStoppedLeading: a write still in flight on a
    // connection that stopped answering would keep the event loop, and that socket, alive.
    // Exiting closes it; the pod restarts and campaigns again as a standby.
    process.exit(1);
  }
  return 0;
}
