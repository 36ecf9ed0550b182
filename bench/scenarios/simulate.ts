/**
 * `npm run bench -- simulate [runs=3] [pods=1000] [namespaces=100] [policies=500] [nodes=20]`:
 * the issue's figure — time from a generated cluster's objects to the full pod × pod matrix
 * for one port (1,000 × 999 verdicts), through the same path as `tessera simulate`:
 * controllers' builders → one calc graph per node → node states → verdict engine.
 *
 * The cluster: `namespaces` namespaces labelled by team, `pods` pods spread evenly over them
 * and over `nodes` nodes (labels app ∈ web/api/db/cache/worker, role client/server, named
 * ports http 8080 and metrics 9090), and `policies` policies: per namespace a Kubernetes
 * default-deny ingress, an allow from clients on the named port, an allow from a team's
 * namespaces, a Calico NetworkPolicy with a Deny and an Allow; for every other namespace a
 * Kubernetes egress policy with an ipBlock; and the rest as GlobalNetworkPolicies in a
 * `security` tier (Pass/Deny on labels). Prints one JSON line per run and a summary.
 */
import type { V3Resource } from '../../src/api/index.ts';
import { Simulation, translateCluster, type ClusterObjects, type K8sNamespace } from '../../src/simulate/index.ts';
import { report, type BenchScenario } from '../scenario.ts';
import type { K8sNetworkPolicy, K8sPod } from '../../src/api/index.ts';

const APPS = ['web', 'api', 'db', 'cache', 'worker'];
const TEAMS = ['red', 'green', 'blue', 'gold'];

export function generateCluster(pods: number, namespaces: number, policies: number, nodes: number): ClusterObjects {
  const nsObjs: K8sNamespace[] = [];
  const podObjs: K8sPod[] = [];
  const nps: K8sNetworkPolicy[] = [];
  const calico: V3Resource[] = [];
  for (let n = 0; n < namespaces; n++) {
    nsObjs.push({ metadata: { name: `ns-${n}`, labels: { team: TEAMS[n % TEAMS.length] ?? 'red' } } });
  }
  for (let p = 0; p < pods; p++) {
    const n = p % namespaces;
    podObjs.push({
      metadata: { name: `pod-${p}`, namespace: `ns-${n}`, labels: { app: APPS[p % APPS.length] ?? 'web', role: p % 3 === 0 ? 'client' : 'server' } },
      spec: {
        nodeName: `node-${p % nodes}`,
        serviceAccountName: 'default',
        containers: [{ ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'metrics', containerPort: 9090, protocol: 'TCP' }] }],
      },
      status: { phase: 'Running', podIP: `10.${64 + Math.floor(p / 65_000)}.${Math.floor(p / 250) % 256}.${(p % 250) + 2}` },
    });
  }
  let budget = policies;
  const push = (np: K8sNetworkPolicy | V3Resource, calicoKind: boolean): void => {
    if (budget <= 0) return;
    budget--;
    if (calicoKind) calico.push(np as V3Resource);
    else nps.push(np as K8sNetworkPolicy);
  };
  calico.push({ apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name: 'security' }, spec: { order: 100, defaultAction: 'Pass' } });
  for (let n = 0; n < namespaces; n++) {
    const namespace = `ns-${n}`;
    const app = APPS[n % APPS.length] ?? 'web';
    push({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'default-deny', namespace }, spec: { podSelector: {}, policyTypes: ['Ingress'] } }, false);
    push(
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'allow-clients', namespace },
        spec: { podSelector: { matchLabels: { app } }, ingress: [{ from: [{ podSelector: { matchLabels: { role: 'client' } } }], ports: [{ port: 'http' }] }] },
      },
      false,
    );
    push(
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'allow-team', namespace },
        spec: {
          podSelector: { matchLabels: { role: 'server' } },
          ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: TEAMS[(n + 1) % TEAMS.length] ?? 'red' } }, podSelector: { matchLabels: { role: 'client' } } }], ports: [{ port: 8080, protocol: 'TCP' }] }],
        },
      },
      false,
    );
    push(
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'NetworkPolicy',
        metadata: { name: 'app-guard', namespace },
        spec: {
          tier: 'default',
          order: 500,
          selector: `app == "${APPS[(n + 2) % APPS.length] ?? 'db'}"`,
          types: ['Ingress'],
          ingress: [
            { action: 'Deny', protocol: 'TCP', source: { selector: 'app == "worker"' }, destination: { ports: [9090] } },
            { action: 'Allow', protocol: 'TCP', source: { namespaceSelector: `team == "${TEAMS[n % TEAMS.length] ?? 'red'}"` }, destination: { ports: ['http'] } },
          ],
        },
      } as unknown as V3Resource,
      true,
    );
    if (n % 2 === 0) {
      push(
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'egress-cidr', namespace },
          spec: { podSelector: { matchLabels: { role: 'client' } }, egress: [{ to: [{ ipBlock: { cidr: '10.64.0.0/14', except: [`10.64.${n % 4}.0/24`] } }] }] },
        },
        false,
      );
    }
  }
  for (let g = 0; budget > 0; g++) {
    push(
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkPolicy',
        metadata: { name: `security.guard-${g}` },
        spec: {
          tier: 'security',
          order: 10 + g,
          selector: `app == "${APPS[g % APPS.length] ?? 'web'}" && projectcalico.org/namespace == "ns-${g % namespaces}"`,
          types: ['Ingress'],
          ingress: [
            { action: g % 3 === 0 ? 'Deny' : 'Pass', protocol: 'TCP', source: { selector: `app == "${APPS[(g + 1) % APPS.length] ?? 'api'}"` }, destination: { ports: [8080] } },
          ],
        },
      } as unknown as V3Resource,
      true,
    );
  }
  return { namespaces: nsObjs, serviceAccounts: [], pods: podObjs, networkPolicies: nps, calico };
}

const scenario: BenchScenario = {
  description: 'simulate: generated cluster (1,000 pods / 100 namespaces / 500 policies) to the full pod × pod matrix for one port',
  includeInDefaultRun: false,
  async run(args) {
    const [runs = 3, pods = 1000, namespaces = 100, policies = 500, nodes = 20] = args.map(Number);
    const objs = generateCluster(pods, namespaces, policies, nodes);
    const policyCount = objs.networkPolicies.length + objs.calico.filter((r) => r.kind !== 'Tier').length;
    const totals: number[] = [];
    for (let r = 1; r <= runs; r++) {
      const t0 = performance.now();
      const translated = translateCluster(objs);
      const sim = new Simulation(translated.resources);
      const t1 = performance.now();
      const m = sim.matrix('TCP', 8080);
      const t2 = performance.now();
      let allowed = 0;
      for (const row of m) for (const c of row) if (c) allowed++;
      const verdicts = sim.endpoints.length * (sim.endpoints.length - 1);
      totals.push((t2 - t0) / 1000);
      report('simulate', `run-${r}`, {
        pods: sim.endpoints.length,
        namespaces,
        policies: policyCount,
        nodes,
        verdicts,
        allowed,
        buildSeconds: +((t1 - t0) / 1000).toFixed(2),
        matrixSeconds: +((t2 - t1) / 1000).toFixed(2),
        totalSeconds: +((t2 - t0) / 1000).toFixed(2),
        verdictsPerSecond: Math.round(verdicts / ((t2 - t1) / 1000)),
      });
    }
    report('simulate', 'summary', { runs, totalSeconds: totals.map((t) => +t.toFixed(2)), targetSeconds: 30, withinTarget: totals.every((t) => t <= 30) });
  },
};

export default scenario;
