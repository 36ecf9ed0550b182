/**
 * Figure: the controllers' memory with 10,000 Kubernetes NetworkPolicies and 20,000 pods
 * (plus 100 namespaces and 300 service accounts), at steady state: every informer cache
 * full (sources and the generated knp.default.* policies, profiles and endpoints), every
 * key reconciled once, nothing left to write.
 *
 * Pods carry a typical Deployment pod's spec and status (~2.5 KB of JSON each), not just
 * the fields the controllers read.
 *
 * No API server: each resource is served by an in-memory ListerWatcher whose list builds
 * fresh objects (so the input is not counted twice) and whose watch stays idle, and the
 * writer only counts calls. The generated objects in the target lists are exactly what the
 * controllers would write, so a non-zero write count would reveal a convergence bug.
 *
 *   npm run figures:controllers-memory -- [policies] [pods]
 *   (node --expose-gc --import tsx bench/controllers-memory.ts [policies] [pods])
 */
import { setMaxListeners } from 'node:events';

import type { KubeResource } from '../src/informers/kube-lister-watcher.ts';
import { InformerFactory } from '../src/informers/informer-factory.ts';
import type { ListerWatcher, ListResult, WatchEvent } from '../src/informers/lister-watcher.ts';
import type { KubeObject } from '../src/informers/object.ts';
import { MANAGED_BY_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE, ownerReferenceTo } from '../src/controllers/ownership.ts';
import type { MirrorController } from '../src/controllers/mirror-controller.ts';
import type { Writer } from '../src/controllers/object-writer.ts';
import { projectPod } from '../src/convert/pod-projection.ts';
import { ProjectingListerWatcher } from '../src/controllers/projecting-lister-watcher.ts';
import { convertNetworkPolicy } from '../src/convert/policy-converter.ts';
import { newPolicyConverterController } from '../src/controllers/policy-converter-controller.ts';
import { namespaceToProfile, serviceAccountToProfile } from '../src/convert/profile-builder.ts';
import { newNamespaceProfileController, newServiceAccountProfileController } from '../src/controllers/profile-controllers.ts';
import { podToWorkloadEndpoint } from '../src/convert/workload-endpoint-builder.ts';
import { newWorkloadEndpointController } from '../src/controllers/workload-endpoint-controller.ts';
import type { K8sNetworkPolicy, K8sPod } from '../src/api/index.ts';
import { untilAborted } from '../src/runtime/until-aborted.ts';

const POLICIES = Number(process.argv[2] ?? 10_000);
const PODS = Number(process.argv[3] ?? 20_000);
const NAMESPACES = 100;
const SAS_PER_NS = 3;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const nsName = (i: number): string => `ns-${i}`;
const uid = (kind: string, i: number): string => `${kind}-${i.toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`;

function namespaces(): KubeObject[] {
  return Array.from({ length: NAMESPACES }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: nsName(i), uid: uid('ns', i), resourceVersion: '1', labels: { 'kubernetes.io/metadata.name': nsName(i), team: `t${i % 10}` } },
  }));
}

function serviceAccounts(): KubeObject[] {
  return Array.from({ length: NAMESPACES * SAS_PER_NS }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: `sa-${i % SAS_PER_NS}`, namespace: nsName(Math.floor(i / SAS_PER_NS)), uid: uid('sa', i), resourceVersion: '1', labels: { role: `r${i % 5}` } },
  }));
}

function policies(): K8sNetworkPolicy[] {
  return Array.from({ length: POLICIES }, (_, i) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `np-${i}`, namespace: nsName(i % NAMESPACES), uid: uid('np', i), resourceVersion: '1' },
    spec: {
      podSelector: { matchLabels: { app: `app-${i % 200}` } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { role: 'frontend' } } }, { namespaceSelector: { matchLabels: { team: `t${i % 10}` } } }],
          ports: [{ protocol: 'TCP', port: 8080 }, { protocol: 'TCP', port: 'metrics' }],
        },
      ],
      egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16'] } }], ports: [{ protocol: 'UDP', port: 53 }] }],
    },
  }));
}

// What a Deployment's pod carries besides what the controllers read (about 2.5 KB of JSON
// once the reflector has stripped managedFields), so the figure is not flattered by
// skeletal pods. Fresh copies per pod: the API server's objects share nothing.
const TYPICAL_CONTAINER = {
  image: 'registry.example.com/shop/app:1.42.0',
  imagePullPolicy: 'IfNotPresent',
  env: [
    { name: 'LOG_LEVEL', value: 'info' },
    { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
  ],
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
  readinessProbe: { httpGet: { path: '/ready', port: 8080, scheme: 'HTTP' }, periodSeconds: 5, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
  volumeMounts: [{ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
  terminationMessagePath: '/dev/termination-log',
  terminationMessagePolicy: 'File',
};
const TYPICAL_POD_SPEC = {
  restartPolicy: 'Always',
  terminationGracePeriodSeconds: 30,
  dnsPolicy: 'ClusterFirst',
  schedulerName: 'default-scheduler',
  securityContext: {},
  enableServiceLinks: true,
  preemptionPolicy: 'PreemptLowerPriority',
  priority: 0,
  tolerations: [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  ],
  volumes: [{ name: 'kube-api-access', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }, { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } }] } }],
};
const TYPICAL_POD_STATUS = {
  qosClass: 'Burstable',
  startTime: '2026-11-21T10:00:00Z',
  conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
    type,
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: '2026-11-21T10:00:05Z',
  })),
  containerStatuses: [
    {
      name: 'app',
      ready: true,
      started: true,
      restartCount: 0,
      image: 'registry.example.com/shop/app:1.42.0',
      imageID: 'registry.example.com/shop/app@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945',
      containerID: 'containerd://8a1e2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8',
      state: { running: { startedAt: '2026-11-21T10:00:04Z' } },
      lastState: {},
    },
  ],
};

function pods(): K8sPod[] {
  return Array.from({ length: PODS }, (_, i) => structuredClone({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `pod-${i}`,
      namespace: nsName(i % NAMESPACES),
      uid: uid('pod', i),
      resourceVersion: '1',
      labels: { app: `app-${i % 200}`, role: i % 3 === 0 ? 'frontend' : 'backend', 'pod-template-hash': `h${i % 1000}` },
    },
    spec: {
      nodeName: `node-${i % 100}`,
      serviceAccountName: `sa-${i % SAS_PER_NS}`,
      ...TYPICAL_POD_SPEC,
      containers: [{ ...TYPICAL_CONTAINER, name: `app-${i % 200}`, ports: [{ name: 'http', containerPort: 8080 }, { name: 'metrics', containerPort: 9090 }] }],
    },
    status: {
      ...TYPICAL_POD_STATUS,
      phase: 'Running',
      hostIP: `192.168.0.${i % 100}`,
      podIP: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      podIPs: [{ ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }],
    },
  }) as K8sPod);
}

// The converged targets, exactly as the controllers write them.
function knps(): KubeObject[] {
  return policies().map((np) => {
    const p = convertNetworkPolicy(np).policy;
    return {
      ...p,
      metadata: { ...p.metadata, resourceVersion: '1', labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: ownerReferenceTo({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: np.metadata ?? {} }) },
    } as KubeObject;
  });
}

function profiles(): KubeObject[] {
  const kns = namespaces().map((ns) => {
    const p = namespaceToProfile(ns);
    return { ...p, metadata: { ...p.metadata, resourceVersion: '1', labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: ownerReferenceTo({ apiVersion: 'v1', kind: 'Namespace', metadata: ns.metadata ?? {} }) } } as KubeObject;
  });
  const ksa = serviceAccounts().map((sa) => {
    const p = serviceAccountToProfile(sa);
    return { ...p, metadata: { ...p.metadata, resourceVersion: '1', labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE }, ownerReferences: [] } } as KubeObject;
  });
  return [...kns, ...ksa];
}

function weps(): KubeObject[] {
  return pods().flatMap((pod) => {
    const w = podToWorkloadEndpoint(pod);
    if (w === undefined) return [];
    return [{ ...w, metadata: { ...w.metadata, resourceVersion: '1', annotations: { [MANAGED_BY_ANNOTATION]: MANAGED_BY_VALUE }, ownerReferences: ownerReferenceTo({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata ?? {} }) } } as KubeObject];
  });
}

class StaticListerWatcher implements ListerWatcher<KubeObject> {
  constructor(
    readonly resource: string,
    private readonly make: () => KubeObject[],
  ) {}

  async list(): Promise<ListResult<KubeObject>> {
    return { items: this.make(), resourceVersion: '1' };
  }

  // An idle watch: no events until the informer stops it.
  // eslint-disable-next-line require-yield
  async *watch(opts: { signal: AbortSignal }): AsyncIterable<WatchEvent<KubeObject>> {
    await untilAborted(opts.signal);
  }
}

const sources: Record<string, () => KubeObject[]> = {
  'networking.k8s.io/networkpolicies': policies as () => KubeObject[],
  '/namespaces': namespaces,
  '/serviceaccounts': serviceAccounts,
  '/pods': pods as () => KubeObject[],
  'projectcalico.org/networkpolicies': knps,
  'projectcalico.org/profiles': profiles,
  'projectcalico.org/workloadendpoints': weps,
};

let writes = 0;
const writer: Writer = {
  apply: async () => void writes++,
  createIfAbsent: async () => false,
  delete: async () => (writes++, true),
  warningEvent: async () => undefined,
  idle: async () => undefined,
};

const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;

gc();
const before = process.memoryUsage();
const started = performance.now();
const factory = new InformerFactory({
  listerWatcherFor: (r: KubeResource) => {
    const make = sources[`${r.group}/${r.plural}`];
    if (make === undefined) throw new Error(`no fixture for ${r.group}/${r.plural}`);
    const lw = new StaticListerWatcher(r.plural, make);
    // As startControllers does: pods are cached in their projected form.
    return r.group === '' && r.plural === 'pods' ? new ProjectingListerWatcher(lw, projectPod) : lw;
  },
});
const controllers: MirrorController<KubeObject, KubeObject>[] = [
  newPolicyConverterController(factory, writer),
  newNamespaceProfileController(factory, writer),
  newServiceAccountProfileController(factory, writer),
  newWorkloadEndpointController(factory, writer),
];
const abort = new AbortController();
setMaxListeners(0, abort.signal);
factory.start();
await factory.waitForCacheSync();
const runs = controllers.map((c) => c.run(abort.signal));
// Converged: every queue empty and idle for a moment.
for (let idleRounds = 0; idleRounds < 5; ) {
  await new Promise((r) => setTimeout(r, 50));
  idleRounds = controllers.every((c) => c.controller.queue.len() === 0) ? idleRounds + 1 : 0;
}
const convergedMs = performance.now() - started;
gc();
const after = process.memoryUsage();
console.log(
  `controllers with ${POLICIES} NetworkPolicies, ${PODS} pods, ${NAMESPACES} namespaces, ${NAMESPACES * SAS_PER_NS} service accounts ` +
    `(+ as many generated policies, endpoints, profiles cached): heapUsed +${mb(after.heapUsed - before.heapUsed)} ` +
    `(total ${mb(after.heapUsed)}), rss ${mb(after.rss)}; converged in ${(convergedMs / 1000).toFixed(1)} s with ${writes} writes`,
);
abort.abort();
await Promise.all(runs);
await factory.stop();
