/**
 * `tessera controllers`: the cluster-side controllers (src/controllers/controllers-process.ts)
 * as a long-running process — JSON logs on stdout, /metrics /livez /readyz, leader
 * election, graceful shutdown on SIGTERM/SIGINT (the lease is released so the standby
 * takes over at once). Authenticates with `--kubeconfig <file>` (or $KUBECONFIG), else
 * in-cluster. Exits 1 when leadership is lost, so the pod restarts and campaigns again.
 */
import { UsageError, walkArgs } from './args.ts';
import { readFileSync } from 'node:fs';

import { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics } from 'prom-client';

import { startControllers } from '../controllers/controllers-process.ts';
import { WORKLOAD_INTERFACE_NAMINGS, type WorkloadInterfaceNaming } from '../convert/workload-endpoint-builder.ts';
import { HealthServer } from '../runtime/health-server.ts';
import { createRootLogger } from '../runtime/logger.ts';
import { newRegistry } from '../runtime/metrics.ts';

const USAGE = `usage: tessera controllers [options]

  --kubeconfig <file>          kubeconfig to use (default: $KUBECONFIG, else in-cluster)
  --namespace <ns>             namespace of the leader-election Lease
                               (default: $POD_NAMESPACE, else the in-cluster namespace, else tessera-system)
  --metrics-port <n>           port for /metrics, /livez, /readyz (default 9094; 0 picks one)
  --metrics-host <addr>        address to listen on (default 0.0.0.0)
  --no-workload-endpoints      do not write WorkloadEndpoints for pods (Calico CNI clusters)
  --workload-interface-naming <calico|none>
                               none (default): endpoints name no interface, each agent finds
                               it from the pod's host route (any CNI; set the agents'
                               --interface-prefix to match); calico: cali + 11 hex of
                               sha1(<ns>.<pod>), as Calico's CNI names host veths
  --lease-duration <seconds>   default 15 (renew deadline 2/3 of it, retry period 2/15)
  --sweep-interval <seconds>   orphan sweep period (default 300)
  --api-writes-per-second <n>  global throttle on API writes (default 50)
`;

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';


interface Options {
  kubeconfig: string | undefined;
  namespace: string | undefined;
  metricsPort: number;
  metricsHost: string;
  workloadEndpoints: boolean;
  workloadInterfaceNaming: WorkloadInterfaceNaming | undefined;
  leaseDurationSeconds: number;
  sweepIntervalSeconds: number;
  writesPerSecond: number;
}

function parseArgs(argv: readonly string[]): Options | 'help' {
  const o: Options = {
    kubeconfig: process.env['KUBECONFIG'] || undefined,
    namespace: process.env['POD_NAMESPACE'] || undefined,
    metricsPort: 9094,
    metricsHost: '0.0.0.0',
    workloadEndpoints: true,
    workloadInterfaceNaming: undefined,
    leaseDurationSeconds: 15,
    sweepIntervalSeconds: 300,
    writesPerSecond: 50,
  };
  const help = walkArgs(argv, (a) => {
    switch (a.flag) {
      case '--kubeconfig':
        o.kubeconfig = a.value();
        break;
      case '--namespace':
        o.namespace = a.value();
        break;
      case '--metrics-port':
        o.metricsPort = a.int(0);
        break;
      case '--metrics-host':
        o.metricsHost = a.value();
        break;
      case '--no-workload-endpoints':
        o.workloadEndpoints = false;
        break;
      case '--workload-interface-naming': {
        const v = a.value();
        if (!(WORKLOAD_INTERFACE_NAMINGS as readonly string[]).includes(v)) {
          throw new UsageError(`--workload-interface-naming must be ${WORKLOAD_INTERFACE_NAMINGS.join(' or ')}, not ${JSON.stringify(v)}`);
        }
        o.workloadInterfaceNaming = v as WorkloadInterfaceNaming;
        break;
      }
      case '--lease-duration':
        o.leaseDurationSeconds = a.int(3);
        break;
      case '--sweep-interval':
        o.sweepIntervalSeconds = a.int(1);
        break;
      case '--api-writes-per-second':
        o.writesPerSecond = a.int(1);
        break;
      default:
        throw a.unknown();
    }
  });
  if (help === 'help') return 'help';
  return o;
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
  let opts;
  try {
    opts = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tessera controllers: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const log = createRootLogger();
  const kubeConfig = new KubeConfig();
  if (opts.kubeconfig !== undefined) kubeConfig.loadFromFile(opts.kubeconfig);
  else kubeConfig.loadFromCluster();

  const registry = newRegistry();
  collectDefaultMetrics({ register: registry });
  const abort = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    log.info({ signal: sig }, 'shutting down');
    abort.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);

  const leaseMs = opts.leaseDurationSeconds * 1000;
  const running = startControllers(
    {
      kubeConfig,
      leaseNamespace: leaseNamespace(opts),
      workloadEndpoints: opts.workloadEndpoints,
      ...(opts.workloadInterfaceNaming === undefined ? {} : { workloadInterfaceNaming: opts.workloadInterfaceNaming }),
      leaseDurationMs: leaseMs,
      renewDeadlineMs: Math.round((leaseMs * 2) / 3),
      retryPeriodMs: Math.round((leaseMs * 2) / 15),
      sweepIntervalMs: opts.sweepIntervalSeconds * 1000,
      writesPerSecond: opts.writesPerSecond,
      registry,
      logger: log,
    },
    abort.signal,
  );
  const health = await HealthServer.listen({ registry, ready: running.ready, live: running.live, port: opts.metricsPort, host: opts.metricsHost });
  log.info({ port: health.port, identity: running.identity }, 'serving /metrics, /livez, /readyz');
  const outcome = await running.done;
  await health.close();
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  log.info({ outcome }, 'exiting');
  log.flush();
  if (outcome === 'lost') {
    // Exit now, as client-go's callers do in OnStoppedLeading: a write still in flight on a
    // connection that stopped answering would keep the event loop, and that socket, alive.
    // Exiting closes it; the pod restarts and campaigns again as a standby.
    process.exit(1);
  }
  return 0;
}
