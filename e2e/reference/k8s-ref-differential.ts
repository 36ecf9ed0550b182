/**
 * The reference differential: one generated case (k8s-ref-cases.ts) decided twice —
 * - by Tessera, on the path `tessera simulate` takes: the Kubernetes objects → the
 *   controllers' builders (`translateCluster`: Namespace → profile, Pod → endpoint,
 *   NetworkPolicy → `knp.default.*` after the apiserver's defaulting) → one calc graph per
 *   node (`Simulation`) → the verdict engine, source egress AND destination ingress;
 * - by the reference evaluator, straight from the Kubernetes objects;
 * and every probe compared. Equal verdicts are required, except in two classes where Tessera
 * may allow less than Kubernetes, never more: a CIDR written in a form the apiserver accepts
 * and Go rejects (Tessera drops that rule, and must say so), and a namespaceSelector made only
 * of `null` requirements (Calico's reading, which Tessera keeps: the policy's namespace).
 */
import { stringify } from 'yaml';
import { translateCluster, Simulation, makePacket, evaluateDirection, type SimEndpoint, type ClusterObjects } from '../../src/simulate/index.ts';
import { RefEvaluator, type RefVerdict } from './k8s-ref-netpol-evaluator.ts';
import { probesOf, type GenCase, type Probe } from './k8s-ref-cases.ts';
import type { K8sNetworkPolicy, K8sPod } from '../../src/api/index.ts';

export interface Disagreement {
  readonly probe: Probe;
  readonly tessera: { readonly allowed: boolean; readonly egress: string; readonly ingress: string };
  readonly reference: RefVerdict;
}

export interface CaseOutcome {
  /** Probes decided. */
  readonly probes: number;
  /** Probes where the verdicts differ in a way the case does not allow (see the module comment). */
  readonly disagreements: readonly Disagreement[];
  /** Rules Tessera dropped, one line each (expected only with `hasGoRejectedCidr`). */
  readonly dropped: readonly string[];
  /** Set when Tessera could not take the case at all (an exception: a bug, reported as such). */
  readonly failure?: string;
}

/** The Kubernetes objects of a case, as `tessera simulate -f` would read them. */
export function clusterObjectsOf(c: GenCase): ClusterObjects {
  const pods: K8sPod[] = c.pods.map((p) => ({
    metadata: { name: p.name, namespace: p.namespace, labels: { ...p.labels } },
    spec: { nodeName: p.node, containers: [{ ports: p.ports.map((port) => ({ ...port })) }] },
    status: { phase: 'Running', podIP: p.ips[0] as string, podIPs: p.ips.map((ip) => ({ ip })) },
  }));
  return {
    namespaces: c.namespaces.map((n) => ({ metadata: { name: n.name, labels: { ...n.labels } } })),
    serviceAccounts: [],
    pods,
    networkPolicies: c.policies.map((np) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', ...structuredClone(np) }) as K8sNetworkPolicy),
    calico: [],
  };
}

function hostNet(ip: string): string {
  return `${ip}/${ip.includes(':') ? 128 : 32}`;
}

/** Runs one case through both readings. Never throws: a Tessera exception is a `failure`. */
export function runCase(c: GenCase): CaseOutcome {
  let sim: Simulation;
  const dropped: string[] = [];
  try {
    const translated = translateCluster(clusterObjectsOf(c));
    dropped.push(...translated.notes.filter((n) => n.includes('rule dropped')));
    sim = new Simulation(translated.resources);
  } catch (e) {
    return { probes: 0, disagreements: [], dropped, failure: `Tessera could not take the case: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (dropped.length > 0 && !c.hasGoRejectedCidr) {
    return { probes: 0, disagreements: [], dropped, failure: `Tessera dropped rules of a case the apiserver and Go both accept:\n${dropped.join('\n')}` };
  }

  // Each pod's endpoint, by each of its addresses (the endpoint holds the canonical nets).
  const byIp = new Map<string, SimEndpoint>();
  for (const ep of sim.endpoints) {
    for (const net of [...ep.endpoint.ipv4Nets, ...ep.endpoint.ipv6Nets]) byIp.set(net, ep);
  }
  const missing = c.pods.flatMap((p) => p.ips.filter((ip) => !byIp.has(hostNet(ip))).map((ip) => `${p.namespace}/${p.name} ${ip}`));
  if (missing.length > 0) return { probes: 0, disagreements: [], dropped, failure: `Tessera has no endpoint for ${missing.join(', ')}` };

  const ref = new RefEvaluator(c);
  const probes = probesOf(c);
  const disagreements: Disagreement[] = [];
  for (const probe of probes) {
    const pkt = makePacket(hostNet(probe.src), hostNet(probe.dst), probe.protocol, probe.port);
    const src = byIp.get(pkt.srcNet);
    const dst = byIp.get(pkt.dstNet);
    const egress = src === undefined ? undefined : evaluateDirection(src.state, src.endpoint, 'egress', pkt).allowed;
    const ingress = dst === undefined ? undefined : evaluateDirection(dst.state, dst.endpoint, 'ingress', pkt).allowed;
    const allowed = egress !== false && ingress !== false;
    const want = ref.decide(probe);
    const mayNarrow = c.hasGoRejectedCidr || c.hasNullOnlyNamespaceSelector;
    const ok = mayNarrow ? !allowed || want.allowed : allowed === want.allowed;
    if (!ok) {
      const side = (v: boolean | undefined): string => (v === undefined ? 'not a pod' : v ? 'allowed' : 'denied');
      disagreements.push({ probe, tessera: { allowed, egress: side(egress), ingress: side(ingress) }, reference: want });
    }
  }
  return { probes: probes.length, disagreements, dropped };
}

/**
 * A reproducer: the case as multi-document YAML that `tessera simulate -f` reads, with the
 * first disagreeing probe and both verdicts in a comment header.
 */
export function reproducer(c: GenCase, outcome: CaseOutcome): string {
  const objs = clusterObjectsOf(c);
  const docs: unknown[] = [
    ...objs.namespaces.map((n) => ({ apiVersion: 'v1', kind: 'Namespace', ...n })),
    ...objs.pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p })),
    ...objs.networkPolicies,
  ];
  const head: string[] = [];
  if (outcome.failure !== undefined) head.push(...outcome.failure.split('\n'));
  const first = outcome.disagreements[0];
  if (first !== undefined) {
    const { probe, tessera, reference } = first;
    head.push(
      `${outcome.disagreements.length} disagreeing probe(s); the first:`,
      `  ${probe.protocol} ${probe.src} -> ${probe.dst}:${probe.port}`,
      `  Tessera:   ${tessera.allowed ? 'allow' : 'deny'} (egress ${tessera.egress}, ingress ${tessera.ingress})`,
      `  Kubernetes reference: ${reference.allowed ? 'allow' : 'deny'} (egress ${reference.egress}, ingress ${reference.ingress})`,
    );
  }
  if (outcome.dropped.length > 0) head.push('Tessera dropped:', ...outcome.dropped.map((d) => `  ${d}`));
  return `${head.map((l) => `# ${l}`).join('\n')}\n${docs.map((d) => stringify(d)).join('---\n')}`;
}
