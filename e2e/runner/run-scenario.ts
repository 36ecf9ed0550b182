/**
 * Runs one scenario on a `ScenarioCluster` (scenario-cluster.ts: processes and network
 * namespaces, or a kind cluster with real pods): namespaces (labels set exactly),
 * ServiceAccounts, the pods (the cluster creates them with the scenario's addresses, each with
 * a probe agent, e2e/dataplane/probe-agent.mjs, serving its ports); then, per step, labels and
 * policies through the API, and every probe as a real connection. `v1 Service` objects are applied
 * through the core API and given their EndpointSlices by the cluster's own controller; a step's
 * probes wait until those slices hold what the pods make of them (services.ts). Everything it created is removed afterwards
 * (also when the scenario fails), except namespaces, which are relabelled when a later
 * scenario reuses them and deleted at the end of the run (`cleanupNamespaces`).
 *
 * Nodes as endpoints ("Hosts as endpoints": the scenario's `nodes`): each listed node is made an
 * endpoint for the scenario (`ScenarioCluster.startNode`: its labels and addresses, servers for
 * its hostPorts) and undone after it; a probe endpoint without `/` is a node — from it, the
 * connection is made in the node's host network from its address; to it, to its address.
 * `HostEndpoint` objects are applied like every other object, their `spec.node` named as the
 * cluster names the node (`clusterNodeName`); a cluster without the HostEndpoint resource fails
 * the scenario naming the object.
 *
 * ClusterNetworkPolicies (cluster-network-policies.ts): before the first one the cluster serves
 * the experimental-channel CRD (`ensureClusterNetworkPolicyCrd`); each is written with strict
 * field validation, so one the CRD cannot hold fails the scenario naming it. A scenario with an
 * egress `nodes` peer probes nodes at the addresses their Node objects report
 * (`reportedNodeAddress`: the scenario's on the process runner, the real ones on kind), the
 * addresses such a peer matches.
 *
 * Kubernetes namespaces are not the scenario's: every name is mapped to a unique one
 * (`<name>-<run id>`, namespace-names.ts) and the scenario rewritten once, up front, so runs
 * sharing a control plane, or following a killed one, never meet. Everything here works on the
 * rewritten scenario (`live`): its methods take Kubernetes names (`names.probe`, `names.manifest`);
 * `run()`'s results carry the scenario's own names again.
 *
 * When is a change "applied by every agent"? Each agent exports
 * `tessera_agent_sent_generation` / `tessera_agent_applied_generation` (calc-graph batches
 * handed to / programmed by the dataplane); after a change the runner waits until they are
 * equal on every agent (`ScenarioCluster.agentsIdle`), then probes; probes that do not match yet are re-run until they do or
 * `settleMs` passes (an event may still be on its way through a watch). A mismatch is a probe
 * that never reached its expected verdict within `settleMs`.
 */
import { execFileSync } from 'node:child_process';

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import { pollUntil } from '../controlplane/index.ts';
import { isClusterNetworkPolicyObject, scenarioUsesNodePeers } from './cluster-network-policies.ts';
import { NamespaceNames, RUN_ANNOTATION } from './namespace-names.ts';
import type { PodProber, ScenarioCluster } from './scenario-cluster.ts';
import { isNodeEndpoint, nodeAddress, podKey, scenarioNodes, stepsOf, type ManifestObject, type PolicyRef, type Probe, type Scenario, type ScenarioNode, type ScenarioPod } from './scenario.ts';
import { applyService, deleteService, isService, waitForServiceEndpoints } from './services.ts';

export interface ProbeResult {
  readonly scenario: string;
  readonly step: number;
  /** As written in the scenario (its namespace names, not the cluster's). */
  readonly probe: Probe;
  /** undefined: skipped (SCTP). */
  readonly got: boolean | undefined;
}

export interface RunOptions {
  /** Timeout of one probe attempt. @default 400 */
  readonly probeTimeoutMs?: number;
  /** How long probes may take to reach their expected verdict after a change. @default 15_000 */
  readonly settleMs?: number;
  /**
   * Scenario namespace → Kubernetes namespace (`NamespaceNames.of(scenarios)`). Share one
   * between the scenarios of a run so a namespace two scenarios declare is created once and
   * relabelled after.
   * @default no mapping: the scenario's own names, for a caller alone on a control plane it
   * started itself (e2e/agent addresses the cluster with them)
   */
  readonly names?: NamespaceNames;
}

function isNotFound(e: unknown): boolean {
  const err = e as { code?: number; statusCode?: number; body?: unknown };
  return err.code === 404 || err.statusCode === 404 || (typeof err.body === 'string' && err.body.includes('"code":404'));
}

/** A 404 for the resource itself (no such API: a CRD not installed), not for an object. */
function isMissingResource(e: unknown): boolean {
  const body = (e as { body?: unknown }).body;
  return isNotFound(e) && typeof body === 'string' && body.includes('page not found');
}

function refOf(o: ManifestObject | PolicyRef): PolicyRef {
  if ('metadata' in o) {
    const ns = o.metadata.namespace;
    return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(ns === undefined ? {} : { namespace: ns }) };
  }
  return o;
}

/**
 * Where an object lives. The runner writes every policy kind through `CustomObjectsApi`, which
 * sends the JSON as written: `KubernetesObjectApi` serializes through the typed models and
 * silently drops `from` of a NetworkPolicy peer (the model calls it `_from`).
 */
function locate(r: PolicyRef): { group: string; version: string; plural: string; namespace?: string; name: string } {
  const [group = '', version = ''] = r.apiVersion.includes('/') ? r.apiVersion.split('/') : ['', r.apiVersion];
  const lower = r.kind.toLowerCase();
  const plural = lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : `${lower}s`;
  return { group, version, plural, name: r.name, ...(r.namespace === undefined ? {} : { namespace: r.namespace }) };
}

function refKey(r: PolicyRef): string {
  return `${r.apiVersion}|${r.kind}|${r.namespace ?? ''}|${r.name}`;
}

export class ScenarioRun {
  private readonly core: CoreV1Api;
  private readonly objects: CustomObjectsApi;
  private readonly servers = new Map<string, PodProber>();
  /** Probers of the nodes made endpoints (`startNode`), by node name. */
  private readonly nodeServers = new Map<string, PodProber>();
  /** Nodes whose `startNode` began (each undone by tearDown). */
  private readonly startedNodes = new Set<string>();
  /** The live scenario's pods by key (Kubernetes namespace names): probe targets' addresses. */
  private readonly pods: ReadonlyMap<string, ScenarioPod>;
  /** The scenario's `nodes` by name: node probe targets' addresses. */
  private readonly nodes: ReadonlyMap<string, ScenarioNode>;
  /** Everything applied, in apply order (deleted in reverse). */
  private readonly applied = new Map<string, PolicyRef>();
  private readonly probeTimeoutMs: number;
  private readonly settleMs: number;
  /** The scenario selects nodes by a ClusterNetworkPolicy `nodes` peer: node probes go to the Nodes' reported addresses. */
  private readonly nodePeers: boolean;
  readonly names: NamespaceNames;
  /** `scenario` with the Kubernetes namespace names: what every method here works on. */
  readonly live: Scenario;

  constructor(
    private readonly cluster: ScenarioCluster,
    private readonly scenario: Scenario,
    opts: RunOptions = {},
  ) {
    this.core = cluster.admin.makeApiClient(CoreV1Api);
    this.objects = cluster.admin.makeApiClient(CustomObjectsApi);
    this.probeTimeoutMs = opts.probeTimeoutMs ?? 400;
    this.settleMs = opts.settleMs ?? 15_000;
    this.names = opts.names ?? new NamespaceNames([]);
    this.live = this.names.scenario(scenario);
    this.pods = new Map(this.live.pods.map((p) => [podKey(p), p]));
    this.nodes = new Map((this.live.nodes ?? []).map((n) => [n.name, n]));
    this.nodePeers = scenarioUsesNodePeers(this.live);
  }

  /** Runs every step; returns one result per probe. Always cleans up. */
  async run(): Promise<ProbeResult[]> {
    const results: ProbeResult[] = [];
    try {
      await this.setUp();
      for (const [i, step] of stepsOf(this.live).entries()) {
        await this.applyStep(step);
        results.push(...(await this.converge(i, step.probes)).map((r) => ({ ...r, probe: this.names.originalProbe(r.probe) })));
      }
    } finally {
      await this.tearDown();
    }
    return results;
  }

  async setUp(): Promise<void> {
    const s = this.live;
    await this.cluster.ensureNodes(scenarioNodes(s));
    for (const ns of s.namespaces) await this.setNamespaceLabels(ns.name, ns.labels ?? {}, true);
    const sas = new Set(s.pods.map((p) => `${p.namespace}/${p.serviceAccount ?? 'default'}`));
    for (const key of sas) {
      const [namespace = '', name = ''] = key.split('/');
      try {
        await this.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name, namespace } } });
      } catch (e) {
        if ((e as { code?: number }).code !== 409) throw e;
      }
    }
    // Started together (a real pod takes seconds); every one is recorded as it comes up, so
    // tearDown removes those that did even when another failed. A node is recorded before its
    // start: tearDown undoes whatever part of it was done.
    const started = await Promise.allSettled([
      ...s.pods.map(async (p) => {
        const prober = await this.cluster.startPod(p);
        this.servers.set(podKey(p), prober);
      }),
      ...(s.nodes ?? []).map(async (n) => {
        this.startedNodes.add(n.name);
        try {
          this.nodeServers.set(n.name, await this.cluster.startNode(n, { atReportedAddresses: this.nodePeers }));
        } catch (e) {
          throw new Error(`node ${n.name} could not be made an endpoint: ${(e as Error).message}`, { cause: e });
        }
      }),
    ]);
    const failed = started.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    const endpoints = `${s.pods.length + (s.nodes ?? []).length} ${(s.nodes ?? []).length === 0 ? 'pods' : 'pods and nodes'}`;
    if (failed.length > 0) throw new AggregateError(failed.map((r) => r.reason as unknown), `scenario ${this.scenario.name}: ${failed.length} of ${endpoints} did not start: ${String((failed[0]?.reason as Error | undefined)?.message)}`);
  }

  /** Sets Kubernetes namespace `name`'s labels to exactly `labels`; creates it (annotated with the run id) if `create`. */
  async setNamespaceLabels(name: string, labels: Record<string, string>, create = false): Promise<void> {
    try {
      const ns = await this.core.readNamespace({ name });
      ns.metadata = { ...ns.metadata, labels: { ...labels } };
      await this.core.replaceNamespace({ name, body: ns });
    } catch (e) {
      if (!create || !isNotFound(e)) throw e;
      await this.core.createNamespace({ body: { metadata: { name, labels, annotations: { [RUN_ANNOTATION]: this.names.runId } } } });
    }
  }

  async applyStep(step: ReturnType<typeof stepsOf>[number]): Promise<void> {
    for (const n of step.namespaceLabels ?? []) await this.setNamespaceLabels(n.name, n.labels);
    for (const p of step.podLabels ?? []) {
      const pod = await this.core.readNamespacedPod({ name: p.name, namespace: p.namespace });
      pod.metadata = { ...pod.metadata, labels: { ...p.labels } };
      await this.core.replaceNamespacedPod({ name: p.name, namespace: p.namespace, body: pod });
    }
    for (const o of step.policies ?? []) await this.upsert(o);
    for (const r of step.deletePolicies ?? []) await this.remove(r);
    const services = [...this.applied.values()].filter(isService);
    if (services.length > 0) await waitForServiceEndpoints(this.cluster.admin, services);
  }

  /** `apiVersion Kind ns/name`, how a failure names the object it could not apply. */
  private static describe(r: PolicyRef): string {
    return `${r.apiVersion} ${r.kind} ${r.namespace === undefined ? '' : `${r.namespace}/`}${r.name}`;
  }

  /**
   * Creates or replaces `o`. A `v1 Service` goes through the core API (services.ts); any other
   * core-group kind is refused, naming it, rather than sent where the API server has no such
   * resource. Every failure names the object.
   */
  async upsert(o: ManifestObject): Promise<void> {
    const ref = refOf(o);
    try {
      if (isService(o)) await applyService(this.cluster.admin, o);
      else if (o.apiVersion === 'v1') throw new Error('the runner applies no core/v1 kind but Service');
      else if (isClusterNetworkPolicyObject(o)) {
        await this.cluster.ensureClusterNetworkPolicyCrd();
        await this.upsertObject(o, ref, 'Strict');
      } else await this.upsertObject(withClusterNodeName(o, (n) => this.cluster.clusterNodeName(n)), ref);
    } catch (e) {
      const missing = isMissingResource(e) ? ` (the API server has no ${locate(ref).plural}.${locate(ref).group} resource: its CRD is not installed)` : '';
      throw new Error(`cannot apply ${ScenarioRun.describe(ref)}${missing}: ${(e as Error).message}`, { cause: e });
    }
    this.applied.delete(refKey(ref));
    this.applied.set(refKey(ref), ref);
  }

  /** Creates or replaces `o`; `fieldValidation` as the API server takes it (its default when undefined). */
  private async upsertObject(o: ManifestObject, ref: PolicyRef, fieldValidation?: 'Strict'): Promise<void> {
    const at = locate(ref);
    const fv = fieldValidation === undefined ? {} : { fieldValidation };
    const body = structuredClone(o) as ManifestObject & { metadata: { resourceVersion?: string } };
    try {
      const existing = (await (at.namespace === undefined
        ? this.objects.getClusterCustomObject(at)
        : this.objects.getNamespacedCustomObject({ ...at, namespace: at.namespace }))) as { metadata?: { resourceVersion?: string } };
      body.metadata.resourceVersion = existing.metadata?.resourceVersion ?? '';
      if (at.namespace === undefined) await this.objects.replaceClusterCustomObject({ ...at, body, ...fv });
      else await this.objects.replaceNamespacedCustomObject({ ...at, namespace: at.namespace, body, ...fv });
    } catch (e) {
      if (!isNotFound(e)) throw e;
      if (at.namespace === undefined) await this.objects.createClusterCustomObject({ group: at.group, version: at.version, plural: at.plural, body, ...fv });
      else await this.objects.createNamespacedCustomObject({ group: at.group, version: at.version, plural: at.plural, namespace: at.namespace, body, ...fv });
    }
  }

  async remove(r: PolicyRef): Promise<void> {
    if (isService(r)) {
      await deleteService(this.cluster.admin, r);
      this.applied.delete(refKey(r));
      return;
    }
    const at = locate(r);
    try {
      if (at.namespace === undefined) await this.objects.deleteClusterCustomObject(at);
      else await this.objects.deleteNamespacedCustomObject({ ...at, namespace: at.namespace });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    this.applied.delete(refKey(r));
  }

  /** Waits until no agent has a calc-graph batch in flight. */
  async agentsIdle(timeoutMs = 10_000): Promise<void> {
    await this.cluster.agentsIdle(timeoutMs);
  }

  /**
   * One attempt of `probe` (Kubernetes namespace names: see `names.probe`); undefined when
   * skipped. An endpoint without `/` is a node: from its prober, to its address.
   */
  async probeOnce(probe: Probe, timeoutMs = this.probeTimeoutMs): Promise<boolean | undefined> {
    const protocol = probe.protocol ?? 'TCP';
    if (protocol === 'SCTP') return undefined;
    const from = isNodeEndpoint(probe.from) ? this.nodeServers.get(probe.from) : this.servers.get(probe.from);
    if (from === undefined) throw new Error(`probe ${probe.from} → ${probe.to}: unknown ${isNodeEndpoint(probe.from) ? 'node' : 'pod'} ${probe.from}`);
    const host = this.targetAddress(probe);
    return from.probe(protocol, host, probe.port, timeoutMs);
  }

  /**
   * The address `probe` connects to: its target pod's or node's, of the probe's family; in a
   * scenario with a ClusterNetworkPolicy `nodes` peer, the address the node's Node object reports.
   */
  targetAddress(probe: Probe): string {
    const family = probe.ipVersion ?? 4;
    const node = isNodeEndpoint(probe.to) ? this.nodes.get(probe.to) : undefined;
    const pod = isNodeEndpoint(probe.to) ? undefined : this.pods.get(probe.to);
    if (node === undefined && pod === undefined) throw new Error(`probe ${probe.from} → ${probe.to}: unknown ${isNodeEndpoint(probe.to) ? 'node' : 'pod'} ${probe.to}`);
    const host = node !== undefined ? (this.nodePeers ? this.cluster.reportedNodeAddress(node, family) : nodeAddress(node, family)) : family === 6 ? pod?.ip6 : pod?.ip;
    if (host === undefined) throw new Error(`probe ${probe.from} → ${probe.to} over IPv${family}: ${probe.to} has no IPv${family} address`);
    return host;
  }

  /** Probes until each matches its expectation or `settleMs` passes; the last verdicts. */
  async converge(step: number, probes: readonly Probe[]): Promise<ProbeResult[]> {
    await this.agentsIdle().catch(() => undefined);
    const deadline = Date.now() + this.settleMs;
    const got = new Map<number, boolean | undefined>();
    let todo = probes.map((_, i) => i);
    for (;;) {
      const verdicts = await Promise.all(todo.map((i) => this.probeOnce(probes[i] as Probe)));
      todo.forEach((i, k) => got.set(i, verdicts[k]));
      todo = todo.filter((i) => got.get(i) !== undefined && got.get(i) !== (probes[i] as Probe).expected);
      if (todo.length === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return probes.map((probe, i) => ({ scenario: this.scenario.name, step, probe, got: got.get(i) }));
  }

  /** Removes pods, policies and pod namespaces; waits until their WorkloadEndpoints are gone. */
  async tearDown(): Promise<void> {
    for (const s of this.servers.values()) s.stop();
    this.servers.clear();
    for (const s of this.nodeServers.values()) s.stop();
    const errors: unknown[] = [];
    for (const ref of [...this.applied.values()].reverse()) await this.remove(ref).catch((e: unknown) => errors.push(e));
    const stopped = await Promise.allSettled(this.live.pods.map((p) => this.cluster.stopPod(p)));
    for (const r of stopped) if (r.status === 'rejected' && !isNotFound(r.reason)) errors.push(r.reason);
    this.nodeServers.clear();
    for (const n of (this.live.nodes ?? []).filter((x) => this.startedNodes.has(x.name))) await this.cluster.stopNode(n).catch((e: unknown) => errors.push(e));
    this.startedNodes.clear();
    const namespaces = new Set(this.live.pods.map((p) => p.namespace));
    await pollUntil(
      async () => {
        for (const ns of namespaces) {
          const list = ((await this.objects.listNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: ns, plural: 'workloadendpoints' })) as { items: unknown[] }).items;
          if (list.length > 0) return undefined;
        }
        return true;
      },
      { description: 'the scenario’s WorkloadEndpoints to be deleted', timeoutMs: 30_000, intervalMs: 50 },
    ).catch((e: unknown) => errors.push(e));
    if (errors.length > 0) throw new AggregateError(errors, `scenario ${this.scenario.name}: clean-up failed`);
  }
}

/**
 * `o` with a HostEndpoint's `spec.node` (a scenario node name) named as the cluster names that
 * node; any other object as is.
 */
export function withClusterNodeName(o: ManifestObject, clusterName: (scenarioNode: string) => string): ManifestObject {
  const spec = o['spec'] as { node?: unknown } | undefined;
  if (o.kind !== 'HostEndpoint' || !o.apiVersion.startsWith('projectcalico.org/') || typeof spec?.node !== 'string') return o;
  return { ...o, spec: { ...spec, node: clusterName(spec.node) } };
}

/**
 * Deletes namespaces left by the run: finalized by hand where there is no namespace controller,
 * else left to it and waited for.
 */
export async function cleanupNamespaces(cluster: ScenarioCluster, names: Iterable<string>): Promise<void> {
  const core = cluster.admin.makeApiClient(CoreV1Api);
  const all = [...names];
  for (const name of all) {
    try {
      await core.deleteNamespace({ name });
      if (!cluster.hasNamespaceController) await core.replaceNamespaceFinalize({ name, body: { metadata: { name }, spec: { finalizers: [] } } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
  if (cluster.hasNamespaceController) {
    const left = async (): Promise<string[]> => (await core.listNamespace()).items.map((n) => n.metadata?.name ?? '').filter((n) => all.includes(n));
    await pollUntil(async () => ((await left()).length === 0 ? true : undefined), { description: `namespaces ${all.join(', ')} to be deleted`, timeoutMs: 120_000, intervalMs: 500 });
  }
}

/** Namespaces on the cluster that run `runId` created (`RUN_ANNOTATION`); [] after a clean run. */
export async function namespacesOfRun(cluster: ScenarioCluster, runId: string): Promise<string[]> {
  const core = cluster.admin.makeApiClient(CoreV1Api);
  return (await core.listNamespace()).items.filter((n) => n.metadata?.annotations?.[RUN_ANNOTATION] === runId).map((n) => n.metadata?.name ?? '');
}

/**
 * `cleanupNamespaces` for an exit or signal handler, which cannot await: synchronous kubectl
 * calls, best effort, each bounded by `--request-timeout`. An interrupted scenario has not
 * torn down, so the namespaces' pods, policies and ServiceAccounts go first (finalizing by hand
 * would otherwise orphan them, and their WorkloadEndpoints would reach the next run's agents).
 * Only for a reused control plane: one the runner started dies with it, namespaces and all.
 */
export function cleanupNamespacesSync(kubectl: string, kubeconfig: string, names: Iterable<string>): void {
  const run = (args: readonly string[], input?: string): void => {
    try {
      execFileSync(kubectl, ['--kubeconfig', kubeconfig, '--request-timeout=5s', ...args], { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'ignore'], ...(input === undefined ? {} : { input }), timeout: 15_000 });
    } catch {
      // Best effort: already gone, or the API server is unreachable.
    }
  };
  for (const name of names) {
    run(['delete', '-n', name, 'pods,services,endpointslices.discovery.k8s.io,networkpolicies.networking.k8s.io,networkpolicies.projectcalico.org,serviceaccounts', '--all', '--ignore-not-found', '--grace-period=0', '--force', '--wait=false']);
    run(['delete', 'namespace', name, '--ignore-not-found', '--wait=false']);
    run(['replace', '--raw', `/api/v1/namespaces/${name}/finalize`, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, spec: { finalizers: [] } }));
  }
}
