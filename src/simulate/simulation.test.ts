import { describe, expect, it } from 'vitest';
import { describeDecision, describeVerdict } from './explanation.ts';
import { IpSetNames } from './ipset-names.ts';
import { applyStep, initialState, stateObjects, type Scenario } from './scenario-file.ts';
import { translateCluster } from './cluster-objects.ts';
import { Simulation } from './simulation.ts';

const ns = (name: string, labels: Record<string, string> = {}): { name: string; labels: Record<string, string> } => ({ name, labels: { 'kubernetes.io/metadata.name': name, ...labels } });
const http = [{ name: 'http', containerPort: 8080, protocol: 'TCP' }];

function cluster(policies: unknown[]): Scenario {
  return {
    name: 't',
    namespaces: [ns('x'), ns('y', { team: 'ops' })],
    pods: [
      { namespace: 'x', name: 'a', labels: { app: 'web' }, ip: '10.66.1.2', node: 'node-1', containerPorts: http },
      { namespace: 'x', name: 'b', labels: { app: 'client' }, ip: '10.66.1.3', node: 'node-2', containerPorts: http },
      { namespace: 'y', name: 'c', labels: { app: 'client' }, ip: '10.66.2.2', node: 'node-2', containerPorts: http },
    ],
    policies,
    probes: [],
  };
}

function simulate(s: Scenario): { sim: Simulation; names: IpSetNames } {
  const notes: string[] = [];
  const t = translateCluster(stateObjects(initialState(s), notes));
  return { sim: new Simulation(t.resources), names: new IpSetNames(t.resources.values()) };
}

function verdict(s: Scenario, from: string, to: string, port = 8080): { allowed: boolean; egress: string; ingress: string; text: string } {
  const { sim, names } = simulate(s);
  const f = sim.endpointFor(from);
  const t = sim.endpointFor(to);
  if (f === undefined || t === undefined) throw new Error('no endpoint');
  const v = sim.verdict(f, t, 'TCP', port, true);
  return {
    allowed: v.allowed,
    egress: describeDecision(v.egress.decision, 'egress'),
    ingress: describeDecision(v.ingress.decision, 'ingress'),
    text: describeVerdict(f, t, 'TCP', port, v, names).join('\n'),
  };
}

const knpFromOps = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'web-from-ops', namespace: 'x' },
  spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'ops' } } }], ports: [{ port: 'http' }] }] },
};
const tier = (name: string, order: number, defaultAction: 'Deny' | 'Pass'): unknown => ({ apiVersion: 'projectcalico.org/v3', kind: 'Tier', metadata: { name }, spec: { order, defaultAction } });
const gnp = (name: string, t: string, ingress: unknown[]): unknown => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: `${t}.${name}` },
  spec: { tier: t, order: 10, selector: 'app == "web"', types: ['Ingress'], ingress },
});

describe('Simulation verdicts and their explanation', () => {
  it('allow: names the Kubernetes policy rule that allowed (named port, namespace selector)', () => {
    const v = verdict(cluster([knpFromOps]), 'y/c', 'x/a');
    expect(v.allowed).toBe(true);
    expect(v.egress).toBe('allowed by profile kns.y egress[0] (Allow)');
    expect(v.ingress).toBe('allowed by NetworkPolicy x/knp.default.web-from-ops ingress[0] (Allow) in tier default');
  });

  it('end-of-tier drop: a selected pod with no allowing rule is dropped at the end of tier default, and the failed selector is named', () => {
    const v = verdict(cluster([knpFromOps]), 'x/b', 'x/a');
    expect(v.allowed).toBe(false);
    expect(v.ingress).toBe('denied at the end of tier default: no policy in it allowed or passed the packet (defaultAction Deny)');
    expect(v.text).toContain('ingress[0] Allow: no match — source selector: 10.66.1.3 is not in {');
    expect(v.text).toContain('team == "ops"');
    expect(v.text).toContain('end of tier default: defaultAction Deny → DROP');
  });

  it('the port is named when it is what failed', () => {
    const v = verdict(cluster([knpFromOps]), 'y/c', 'x/a', 9090);
    expect(v.allowed).toBe(false);
    expect(v.text).toContain('destination ports: TCP/9090 10.66.1.2,tcp:9090 not in {port "http" (tcp) of all()}');
  });

  it('deny: an explicit Deny in an earlier tier decides before the Kubernetes policy', () => {
    const v = verdict(cluster([tier('security', 100, 'Pass'), gnp('deny-ops', 'security', [{ action: 'Deny', source: { namespaceSelector: 'team == "ops"' } }]), knpFromOps]), 'y/c', 'x/a');
    expect(v.allowed).toBe(false);
    expect(v.ingress).toBe('denied by GlobalNetworkPolicy security.deny-ops ingress[0] (Deny) in tier security');
  });

  it('pass-then-allow: Pass skips the rest of its tier and the next tier allows', () => {
    const v = verdict(
      cluster([
        tier('security', 100, 'Deny'),
        gnp('pass-ops', 'security', [{ action: 'Pass', source: { namespaceSelector: 'team == "ops"' } }]),
        knpFromOps,
      ]),
      'y/c',
      'x/a',
    );
    expect(v.allowed).toBe(true);
    expect(v.text).toContain('→ Pass: skip the rest of tier security');
    expect(v.ingress).toBe('allowed by NetworkPolicy x/knp.default.web-from-ops ingress[0] (Allow) in tier default');
  });

  it('a tier with defaultAction Pass and no deciding rule goes on to the profiles', () => {
    const v = verdict(cluster([tier('security', 100, 'Pass'), gnp('log-only', 'security', [{ action: 'Log' }])]), 'x/b', 'x/a');
    expect(v.allowed).toBe(true);
    expect(v.ingress).toBe('allowed by profile kns.x ingress[0] (Allow)');
    expect(v.text).toContain('end of tier security: defaultAction Pass → next tier');
  });

  it('a Log-only policy in a Deny tier drops at the end of the tier (issue #3801)', () => {
    const v = verdict(cluster([tier('audit', 100, 'Deny'), gnp('log-only', 'audit', [{ action: 'Log' }])]), 'x/b', 'x/a');
    expect(v.allowed).toBe(false);
    expect(v.ingress).toContain('end of tier audit');
  });

  it('an endpoint whose profiles allow nothing drops at the end of the chain (no profile matched)', () => {
    const s = cluster([{ apiVersion: 'projectcalico.org/v3', kind: 'Profile', metadata: { name: 'kns.x' }, spec: { ingress: [{ action: 'Allow', protocol: 'UDP' }], egress: [{ action: 'Allow' }] } }]);
    const v = verdict(s, 'y/c', 'x/a');
    expect(v.allowed).toBe(false);
    expect(v.ingress).toBe("denied: no tier decided and no profile allowed it (the endpoint chain's final DROP)");
    expect(v.text).toContain('ingress[0] Allow: no match — protocol: rule wants UDP, packet is TCP');
    expect(v.text).toContain('no profile matched → DROP');
  });

  it('profile: with no policies every pair is allowed by the namespace profile', () => {
    const { sim } = simulate(cluster([]));
    expect(sim.matrix('TCP', 80).flat().filter(Boolean)).toHaveLength(6);
  });

  it('ipBlock peers match pod IPs; except carves them out', () => {
    const np = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'cidr', namespace: 'x' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.66.0.0/16', except: ['10.66.2.0/24'] } }] }] },
    };
    expect(verdict(cluster([np]), 'x/b', 'x/a').allowed).toBe(true);
    const v = verdict(cluster([np]), 'y/c', 'x/a');
    expect(v.allowed).toBe(false);
    expect(v.text).toContain('source notNets: 10.66.2.2 is in 10.66.2.0/24');
  });

  it('egress: a Kubernetes egress policy on the source decides on the source node', () => {
    const np = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'egress-none', namespace: 'y' },
      spec: { podSelector: {}, egress: [{ to: [{ podSelector: { matchLabels: { app: 'nothing' } } }] }] },
    };
    const v = verdict(cluster([np]), 'y/c', 'x/a');
    expect(v.allowed).toBe(false);
    expect(v.egress).toContain('end of tier default');
  });

  it('steps: label changes and policy deletes are fed incrementally and change verdicts', () => {
    const s = cluster([knpFromOps]);
    const state = initialState(s);
    const notes: string[] = [];
    const sim = new Simulation(translateCluster(stateObjects(state, notes)).resources);
    const allowed = (): boolean => {
      const f = sim.endpointFor('x/b');
      const t = sim.endpointFor('x/a');
      if (f === undefined || t === undefined) throw new Error('no endpoint');
      return sim.verdict(f, t, 'TCP', 8080).allowed;
    };
    expect(allowed()).toBe(false);
    applyStep(state, { namespaceLabels: [{ name: 'x', labels: { 'kubernetes.io/metadata.name': 'x', team: 'ops' } }] });
    sim.update(translateCluster(stateObjects(state, notes)).resources);
    expect(allowed()).toBe(true);
    applyStep(state, { namespaceLabels: [{ name: 'x', labels: { 'kubernetes.io/metadata.name': 'x' } }] });
    sim.update(translateCluster(stateObjects(state, notes)).resources);
    expect(allowed()).toBe(false);
    applyStep(state, { deletePolicies: [{ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', namespace: 'x', name: 'web-from-ops' }] });
    sim.update(translateCluster(stateObjects(state, notes)).resources);
    expect(allowed()).toBe(true);
  });

  it('SCTP probes are decided by the engine', () => {
    const np = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'sctp', namespace: 'x' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ protocol: 'SCTP', port: 8080 }] }] },
    };
    const { sim } = simulate(cluster([np]));
    const f = sim.endpointFor('x/b');
    const t = sim.endpointFor('x/a');
    if (f === undefined || t === undefined) throw new Error('no endpoint');
    expect(sim.verdict(f, t, 'SCTP', 8080).allowed).toBe(true);
    expect(sim.verdict(f, t, 'TCP', 8080).allowed).toBe(false);
  });
});
