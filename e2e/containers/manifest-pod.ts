/**
 * Runs a Deployment's or DaemonSet's pod template from the API server as a podman container,
 * doing what the kubelet would do with it — there is no kubelet in this suite, so the
 * workloads manifests/ install never run by themselves. What the template says is what the
 * container gets, so the suite proves manifests/ as written:
 * - image and args (the image's entrypoint is `tessera`, as for a pod's `args`);
 * - env, with the fieldRefs manifests/ use resolved (metadata.namespace, metadata.name,
 *   spec.nodeName), plus KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount's token, CA and
 *   namespace mounted read-only where client libraries look for them (in-cluster config);
 * - securityContext: runAsUser/runAsGroup (container over pod), capabilities drop/add,
 *   readOnlyRootFilesystem, allowPrivilegeEscalation: false (no-new-privileges);
 *   seccomp RuntimeDefault is podman's default profile;
 * - hostPath volumes as bind mounts (readOnly honoured);
 * - hostNetwork: the container joins the node's network namespace, else podman's bridge.
 * Anything else in the template (probes, resources, affinity) is a kubelet or scheduler
 * concern the suite does not imitate; readiness is checked the way the probe would (GET
 * /readyz on the metrics port, from inside the pod's network).
 *
 * `capabilities` in the options replaces the template's added capabilities: the one
 * deliberate deviation, for proving what happens with fewer than the manifests grant.
 */
import { AppsV1Api, type KubeConfig, type V1Container, type V1PodTemplateSpec } from '@kubernetes/client-node';
import { GenericContainer, type StartedTestContainer } from 'testcontainers';

import { PollAbort, pollUntil } from '../controlplane/poll-until.ts';
import { RUN_LABEL } from './global-setup.ts';
import { podman } from './podman.ts';
import { API_PORT, API_SERVICE_HOST, SERVICE_ACCOUNT_MOUNT, TESSERA_NAMESPACE } from './control-plane-containers.ts';

/** The pod template of a workload manifests/ installed, as the API server stores it. */
export async function readPodTemplate(admin: KubeConfig, kind: 'Deployment' | 'DaemonSet', name: string): Promise<V1PodTemplateSpec> {
  const apps = admin.makeApiClient(AppsV1Api);
  const workload =
    kind === 'Deployment'
      ? await apps.readNamespacedDeployment({ name, namespace: TESSERA_NAMESPACE })
      : await apps.readNamespacedDaemonSet({ name, namespace: TESSERA_NAMESPACE });
  return workload.spec!.template;
}

/** The template's only container (manifests/ define one per pod). */
export function onlyContainer(template: V1PodTemplateSpec): V1Container {
  const containers = template.spec?.containers ?? [];
  if (containers.length !== 1) throw new Error(`pod template has ${containers.length} containers, expected 1`);
  return containers[0]!;
}

export interface ManifestPodOptions {
  /** The pod's name: its hostname and metadata.name. */
  readonly podName: string;
  readonly nodeName: string;
  /** From ContainerControlPlane.serviceAccountDir(). */
  readonly serviceAccountDir: string;
  /** Where API_SERVICE_HOST resolves inside the container. */
  readonly apiAddress: string;
  /** Required when the template says hostNetwork: the node's network namespace. */
  readonly nodeNetns?: string;
  readonly runId: string;
  /** Replaces the template's capabilities.add (see the file comment). */
  readonly capabilities?: readonly string[];
  /** Receives each log line (stdout and stderr). */
  readonly onLog?: (line: string) => void;
}

/** testcontainers' bind mount (its type is not exported from the package root). */
type BindMount = Parameters<GenericContainer['withBindMounts']>[0][number];

/** A GenericContainer that can also have a read-only root file system. */
class PodContainer extends GenericContainer {
  withReadOnlyRootFilesystem(): this {
    this.hostConfig.ReadonlyRootfs = true;
    return this;
  }
}

/** The container the kubelet would start for `template` (see the file comment); not started. */
export function containerForTemplate(template: V1PodTemplateSpec, options: ManifestPodOptions): GenericContainer {
  const spec = template.spec!;
  const c = onlyContainer(template);
  const fields: Record<string, string> = {
    'metadata.namespace': TESSERA_NAMESPACE,
    'metadata.name': options.podName,
    'spec.nodeName': options.nodeName,
  };
  const env: Record<string, string> = { KUBERNETES_SERVICE_HOST: API_SERVICE_HOST, KUBERNETES_SERVICE_PORT: String(API_PORT) };
  for (const e of c.env ?? []) {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    const value = e.value ?? (path === undefined ? undefined : fields[path]);
    if (value === undefined) throw new Error(`env ${e.name}: unsupported valueFrom ${JSON.stringify(e.valueFrom)}`);
    env[e.name] = value;
  }

  const container = new PodContainer(c.image!)
    .withLabels({ [RUN_LABEL]: options.runId, 'io.tessera.pod': options.podName })
    .withCommand([...(c.args ?? [])])
    .withEnvironment(env)
    .withExtraHosts([{ host: API_SERVICE_HOST, ipAddress: options.apiAddress }]);

  if (spec.hostNetwork === true) {
    if (options.nodeNetns === undefined) throw new Error(`${options.podName}: hostNetwork pod needs the node's network namespace`);
    // A host-network pod sees its node's name as hostname, as on a kubelet.
    container.withNetworkMode(`ns:/run/netns/${options.nodeNetns}`).withHostname(options.nodeName);
  } else {
    container.withHostname(options.podName);
  }

  const podSc = spec.securityContext ?? {};
  const sc = c.securityContext ?? {};
  const user = sc.runAsUser ?? podSc.runAsUser;
  const group = sc.runAsGroup ?? podSc.runAsGroup;
  if (user !== undefined) container.withUser(group === undefined ? String(user) : `${user}:${group}`);
  if (sc.capabilities?.drop !== undefined) container.withDroppedCapabilities(...sc.capabilities.drop);
  const add = options.capabilities ?? sc.capabilities?.add ?? [];
  if (add.length > 0) container.withAddedCapabilities(...add);
  if (sc.readOnlyRootFilesystem === true) container.withReadOnlyRootFilesystem();
  if (sc.allowPrivilegeEscalation === false) container.withSecurityOpt('no-new-privileges');

  // withBindMounts replaces the list: collect every mount first.
  const mounts: BindMount[] = [{ source: options.serviceAccountDir, target: SERVICE_ACCOUNT_MOUNT, mode: 'ro' }];
  const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));
  for (const m of c.volumeMounts ?? []) {
    const hostPath = volumes.get(m.name)?.hostPath?.path;
    if (hostPath === undefined) throw new Error(`volumeMount ${m.name}: only hostPath volumes are supported`);
    mounts.push({ source: hostPath, target: m.mountPath, mode: m.readOnly === true ? 'ro' : 'rw' });
  }
  container.withBindMounts(mounts);

  const onLog = options.onLog;
  if (onLog !== undefined) {
    container.withLogConsumer((stream) => {
      let partial = '';
      stream.on('data', (chunk: Buffer | string) => {
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) onLog(line);
      });
    });
  }
  return container;
}

/**
 * Whether GET http://127.0.0.1:<port>/readyz from inside the container answers 200 — the
 * manifests' readinessProbe, run with the image's own node.
 */
export async function podReady(container: StartedTestContainer, port: number): Promise<boolean> {
  const script = `fetch('http://127.0.0.1:${port}/readyz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))`;
  const { exitCode } = await container.exec(['node', '-e', script]);
  return exitCode === 0;
}

/** `{{.State.Status}}` and exit code of a container, from podman. */
export async function containerState(container: StartedTestContainer): Promise<{ status: string; exitCode: number }> {
  const [status = '', exitCode = ''] = (await podman(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', container.getId()])).trim().split(' ');
  return { status, exitCode: Number(exitCode) };
}

/**
 * Resolves once {@link podReady}; fails at once, with the container's last log lines, when the
 * container has exited instead (a crash-looping pod never becomes ready).
 */
export async function waitPodReady(container: StartedTestContainer, port: number, name: string, logLines: () => readonly string[], timeoutMs = 90_000): Promise<void> {
  await pollUntil(
    async () => {
      const { status, exitCode } = await containerState(container);
      if (status === 'exited') {
        throw new PollAbort(new Error(`${name} exited with status ${exitCode} before it was ready; last log lines:\n${logLines().slice(-20).join('\n')}`));
      }
      return (await podReady(container, port)) ? true : undefined;
    },
    { description: `${name} to be ready (GET /readyz on ${port})`, timeoutMs },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; last log lines:\n${logLines().slice(-20).join('\n')}`, { cause: err });
  });
}
