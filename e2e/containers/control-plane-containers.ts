/**
 * The test control plane of e2e/controlplane — Debian's etcd 3.4 and kube-apiserver
 * v1.32.13 with the same flags — as two containers of localhost/tessera-controlplane, started
 * with testcontainers on podman's default bridge network.
 *
 * How each party reaches kube-apiserver, and why its self-signed serving certificate fits:
 * - this process (kubectl, the admin client): `https://localhost:<random host port>`
 *   (podman publishes 6443 on a free port; `localhost` is in the certificate because
 *   kube-apiserver binds 0.0.0.0);
 * - containers on the bridge (the controllers): `https://kubernetes.default.svc:6443`, the
 *   name resolved to kube-apiserver's bridge address by an /etc/hosts entry, as in a cluster
 *   where pods reach the API through that name;
 * - a node network namespace (the agent, hostNetwork): the same name resolved to
 *   {@link API_NODE_ADDRESS}, which {@link ContainerControlPlane.connectNode} puts on a veth
 *   between the node and kube-apiserver's container (it is also --advertise-address, so the
 *   certificate names it).
 * Every container carries the run's label; stop() removes them and the temp dir, and global
 * teardown removes whatever a crashed file left.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { ApiextensionsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';

import { binDirFor } from '../controlplane/binaries.ts';
import { writeKubeconfig } from '../controlplane/kubeconfig.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken } from '../controlplane/service-account-token.ts';
import type { ContainersContext } from './context.ts';
import { RUN_LABEL } from './global-setup.ts';
import { podman, REPO_ROOT } from './podman.ts';

const run = promisify(execFile);

/** kube-apiserver's address on the veth into each node namespace (see the file comment). */
export const API_NODE_ADDRESS = '172.31.254.1';
/** The name pods and nodes use for the API server (the certificate carries it). */
export const API_SERVICE_HOST = 'kubernetes.default.svc';
export const API_PORT = 6443;
/** The namespace manifests/ install into. */
export const TESSERA_NAMESPACE = 'tessera-system';

/** Where a ServiceAccount's token, CA and namespace are mounted, as the kubelet mounts them. */
export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

export class ContainerControlPlane {
  private constructor(
    readonly dir: string,
    private readonly etcd: StartedTestContainer,
    readonly apiserver: StartedTestContainer,
    /** kube-apiserver's address on the bridge network. */
    readonly apiserverBridgeAddress: string,
    /** `https://localhost:<port>` */
    readonly server: string,
    readonly caPem: string,
    /** system:masters, static token: only for installing and observing, never for Tessera. */
    readonly admin: KubeConfig,
    readonly adminKubeconfigPath: string,
  ) {}

  /** Starts etcd, then kube-apiserver (resolves when /readyz answers 200). */
  static async start(ctx: ContainersContext): Promise<ContainerControlPlane> {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-tc-'));
    chmodSync(dir, 0o755);
    const started: StartedTestContainer[] = [];
    try {
      const apiDir = join(dir, 'apiserver');
      mkdirSync(join(apiDir, 'certs'), { recursive: true });
      const token = randomBytes(32).toString('base64url');
      const { publicKey, privateKey } = generateKeyPairSync('rsa', {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      writeFileSync(join(apiDir, 'sa.pub'), publicKey, { mode: 0o600 });
      writeFileSync(join(apiDir, 'sa.key'), privateKey, { mode: 0o600 });
      writeFileSync(join(apiDir, 'tokens.csv'), `${token},tessera-admin,tessera-admin-uid,"system:masters"\n`, { mode: 0o600 });

      const labels = { [RUN_LABEL]: ctx.runId };
      const etcd = await new GenericContainer(ctx.controlPlaneImage)
        .withLabels(labels)
        // etcd 3.4 cannot skip fsync: its data on tmpfs, as e2e/controlplane does.
        .withTmpFs({ '/var/lib/etcd': 'rw,size=512m' })
        .withCommand([
          'etcd',
          '--name=default',
          '--data-dir=/var/lib/etcd/data',
          '--listen-client-urls=http://0.0.0.0:2379',
          '--advertise-client-urls=http://127.0.0.1:2379',
          '--listen-peer-urls=http://127.0.0.1:2380',
          '--initial-advertise-peer-urls=http://127.0.0.1:2380',
          '--initial-cluster=default=http://127.0.0.1:2380',
          '--logger=zap',
          '--log-outputs=stderr',
        ])
        // Published on a random host port only so the wait can ask /health, as e2e/controlplane does.
        .withExposedPorts(2379)
        .withWaitStrategy(Wait.forHttp('/health', 2379).forResponsePredicate((body) => body.includes('"health":"true"')))
        .withStartupTimeout(60_000)
        .start();
      started.push(etcd);
      const etcdAddress = bridgeAddress(etcd);

      const inContainer = '/etc/kubernetes/tessera';
      const apiserver = await new GenericContainer(ctx.controlPlaneImage)
        .withLabels(labels)
        .withBindMounts([{ source: apiDir, target: inContainer, mode: 'rw' }])
        .withExposedPorts(API_PORT)
        .withCommand([
          'kube-apiserver',
          `--etcd-servers=http://${etcdAddress}:2379`,
          `--cert-dir=${inContainer}/certs`,
          `--secure-port=${API_PORT}`,
          '--bind-address=0.0.0.0',
          `--advertise-address=${API_NODE_ADDRESS}`,
          '--service-cluster-ip-range=10.0.0.0/24',
          '--allow-privileged=true',
          // No controller-manager creates the `default` ServiceAccount in new namespaces.
          '--disable-admission-plugins=ServiceAccount',
          '--authorization-mode=RBAC',
          `--token-auth-file=${inContainer}/tokens.csv`,
          `--service-account-issuer=https://${API_SERVICE_HOST}`,
          `--service-account-key-file=${inContainer}/sa.pub`,
          `--service-account-signing-key-file=${inContainer}/sa.key`,
          '--shutdown-watch-termination-grace-period=2s',
        ])
        .withWaitStrategy(Wait.forHttp('/readyz', API_PORT).usingTls().allowInsecure().forStatusCode(200))
        .withStartupTimeout(120_000)
        .start();
      started.push(apiserver);

      const caPem = readFileSync(join(apiDir, 'certs', 'apiserver.crt'), 'utf8');
      const server = `https://localhost:${apiserver.getMappedPort(API_PORT)}`;
      const adminKubeconfigPath = join(dir, 'admin.kubeconfig');
      const admin = writeKubeconfig(adminKubeconfigPath, { server, token, user: 'tessera-admin', caPem });
      return new ContainerControlPlane(dir, etcd, apiserver, bridgeAddress(apiserver), server, caPem, admin, adminKubeconfigPath);
    } catch (err) {
      for (const c of started.reverse()) await c.stop({ timeout: 1_000 }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Runs the host's kubectl (e2e/controlplane/build.sh's, the same version) as the admin. */
  async kubectl(args: readonly string[]): Promise<string> {
    const { stdout } = await run(join(binDirFor(), 'kubectl'), ['--kubeconfig', this.adminKubeconfigPath, ...args], {
      maxBuffer: 64 << 20,
    });
    return stdout;
  }

  /**
   * Installs Tessera as a user does — `kubectl apply -f manifests/` — then points its
   * Deployments and DaemonSet at `image` with `kubectl set image` (a cluster without registry
   * access loads the local image instead of pulling manifests/' ghcr.io reference), and waits
   * until the projectcalico.org CRDs are Established.
   */
  async installManifests(image: string): Promise<void> {
    await this.kubectl(['apply', '-f', join(REPO_ROOT, 'manifests')]);
    // Every container of every workload manifests/ put in the namespace (controllers, agent, typha).
    await this.kubectl(['-n', TESSERA_NAMESPACE, 'set', 'image', 'deployments,daemonsets', '--all', `*=${image}`]);
    const api = this.admin.makeApiClient(ApiextensionsV1Api);
    await pollUntil(
      async () => {
        const crds = (await api.listCustomResourceDefinition()).items.filter((c) => c.spec.group === 'projectcalico.org');
        const established = crds.every((c) => (c.status?.conditions ?? []).some((x) => x.type === 'Established' && x.status === 'True'));
        return crds.length > 0 && established ? true : undefined;
      },
      { description: 'the projectcalico.org CRDs to be Established', timeoutMs: 60_000 },
    );
  }

  /**
   * A directory with what the kubelet mounts at {@link SERVICE_ACCOUNT_MOUNT} for a pod of
   * ServiceAccount tessera-system/`serviceAccount`: a bound token from the TokenRequest API,
   * ca.crt and namespace. Readable by any user (the controllers run as 65532).
   */
  async serviceAccountDir(serviceAccount: string): Promise<string> {
    const identity = await issueServiceAccountToken(this.admin, {
      namespace: TESSERA_NAMESPACE,
      serviceAccount,
      create: false,
      server: this.server,
      caPem: this.caPem,
      kubeconfigPath: join(this.dir, `${serviceAccount}.kubeconfig`),
      expirationSeconds: 3_600,
    });
    const dir = join(this.dir, `sa-${serviceAccount}`);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'token'), identity.token, { mode: 0o644 });
    writeFileSync(join(dir, 'ca.crt'), this.caPem, { mode: 0o644 });
    writeFileSync(join(dir, 'namespace'), TESSERA_NAMESPACE, { mode: 0o644 });
    return dir;
  }

  /**
   * Joins node namespace `nodeNs` (whose own address is `nodeAddress`) to kube-apiserver's
   * container with a veth pair: {@link API_NODE_ADDRESS}/32 on the container's end, a /32
   * route each way. Nothing changes in the host's network namespace. Deleting the node
   * namespace deletes the pair.
   */
  async connectNode(nodeNs: string, nodeAddress: string): Promise<void> {
    const pid = (await podman(['inspect', '--format', '{{.State.Pid}}', this.apiserver.getId()])).trim();
    const suffix = randomBytes(3).toString('hex');
    const [nodeEnd, apiEnd] = [`tca${suffix}`, `tcn${suffix}`];
    await run('ip', ['link', 'add', nodeEnd, 'netns', nodeNs, 'type', 'veth', 'peer', 'name', apiEnd, 'netns', pid]);
    const inApi = (args: string[]) => run('nsenter', ['-t', pid, '-n', ...args]);
    const inNode = (args: string[]) => run('ip', ['netns', 'exec', nodeNs, ...args]);
    await inApi(['ip', 'addr', 'add', `${API_NODE_ADDRESS}/32`, 'dev', apiEnd]);
    await inApi(['ip', 'link', 'set', apiEnd, 'up']);
    await inApi(['ip', 'route', 'add', `${nodeAddress}/32`, 'dev', apiEnd]);
    await inNode(['ip', 'link', 'set', nodeEnd, 'up']);
    await inNode(['ip', 'route', 'add', `${API_NODE_ADDRESS}/32`, 'dev', nodeEnd]);
  }

  /** Stops kube-apiserver, then etcd, and removes the temp dir. Idempotent. */
  async stop(): Promise<void> {
    for (const c of [this.apiserver, this.etcd]) await c.stop({ timeout: 2_000 }).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A container's address on the (only) network it joined. */
export function bridgeAddress(container: StartedTestContainer): string {
  const [network] = container.getNetworkNames();
  if (network === undefined) throw new Error(`container ${container.getName()} joined no network`);
  return container.getIpAddress(network);
}
