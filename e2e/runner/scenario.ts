/**
 * Scenario files (../../../shared/scenarios/README.md, plus the `steps` extension of
 * e2e/scenarios/README.md): loading, validation and the step list a runner walks.
 * A scenario without `steps` is one step (its top-level policies and probes).
 *
 * The runner also reads a pod's `ip6` (a dual-stack pod) and a probe's `ipVersion` (probe the
 * IPv6 address). They are not part of the shared file format — no scenario file uses them and
 * `tessera simulate` does not read them; e2e/agent/dual-stack.agent.test.ts builds its scenario
 * in code.
 *
 * `nodes` ("Hosts as endpoints" in the shared README; src/simulate/scenario-nodes.ts holds the
 * type and the checks `tessera simulate` shares): nodes with an address of their own, which
 * probes name without a `/` (`"from": "node-1"`). A listed node may also be a pod's `node`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { join } from 'node:path';

import { isNodeEndpoint, nodeProblems, nodesByName, probeNodeProblem, type ScenarioNode } from '../../src/simulate/scenario-nodes.ts';

export { isNodeEndpoint, nodeAddress, servesHostPort, type ScenarioHostPort, type ScenarioNode } from '../../src/simulate/scenario-nodes.ts';

export type Protocol = 'TCP' | 'UDP' | 'SCTP';

export interface ContainerPort {
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol?: Protocol;
}

export interface ScenarioPod {
  readonly namespace: string;
  readonly name: string;
  readonly labels?: Record<string, string>;
  readonly ip: string;
  /** An IPv6 address as well (a dual-stack pod: both go into status.podIPs). */
  readonly ip6?: string;
  readonly node: string;
  readonly serviceAccount?: string;
  readonly containerPorts?: readonly ContainerPort[];
}

export interface Probe {
  /** `ns/pod`, or a node's name (no `/`). */
  readonly from: string;
  /** `ns/pod`, or a node's name (no `/`). */
  readonly to: string;
  readonly port: number;
  readonly protocol?: Protocol;
  /** Probe the target's IPv6 address (both ends must have one: a pod's `ip6`, a node's). @default 4 */
  readonly ipVersion?: 4 | 6;
  readonly expected: boolean;
}

/** A Kubernetes object as written in a scenario (policies, tiers, profiles). */
export interface ManifestObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [k: string]: unknown };
  readonly [k: string]: unknown;
}

export interface PolicyRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface Step {
  readonly description?: string;
  readonly namespaceLabels?: ReadonlyArray<{ readonly name: string; readonly labels: Record<string, string> }>;
  readonly podLabels?: ReadonlyArray<{ readonly namespace: string; readonly name: string; readonly labels: Record<string, string> }>;
  readonly policies?: readonly ManifestObject[];
  readonly deletePolicies?: readonly PolicyRef[];
  readonly probes: readonly Probe[];
}

export interface Scenario {
  readonly name: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly namespaces: ReadonlyArray<{ readonly name: string; readonly labels?: Record<string, string> }>;
  /** Nodes with an address of their own and the ports they serve (probe endpoints). */
  readonly nodes?: readonly ScenarioNode[];
  readonly pods: readonly ScenarioPod[];
  readonly policies?: readonly ManifestObject[];
  readonly probes?: readonly Probe[];
  readonly steps?: readonly Step[];
}

export interface ScenarioFile {
  readonly path: string;
  readonly schema: string;
  readonly scenarios: readonly Scenario[];
}

export const SCHEMAS = ['netpol-truth-tables/v1', 'calico-truth-tables/v1'] as const;

export class ScenarioFileError extends Error {}

/** Step 0 (top-level policies and probes) followed by `steps`. */
export function stepsOf(s: Scenario): Step[] {
  return [{ description: 'initial state', policies: s.policies ?? [], probes: s.probes ?? [] }, ...(s.steps ?? [])];
}

export function podKey(p: { namespace: string; name: string }): string {
  return `${p.namespace}/${p.name}`;
}

/** Every node a scenario names: its `nodes`, then its pods' nodes (first appearance order). */
export function scenarioNodes(s: Pick<Scenario, 'nodes' | 'pods'>): string[] {
  return [...new Set([...(s.nodes ?? []).map((n) => n.name), ...s.pods.map((p) => p.node)])];
}

function check(cond: unknown, where: string, msg: string): asserts cond {
  if (!cond) throw new ScenarioFileError(`${where}: ${msg}`);
}

/** Parses and validates one file; messages name the file, the scenario and the field. */
export function parseScenarioFile(path: string, text: string): ScenarioFile {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ScenarioFileError(`${path}: not JSON: ${(e as Error).message}`);
  }
  const d = doc as { schema?: unknown; scenarios?: unknown };
  check(typeof d === 'object' && d !== null, path, 'not an object');
  check(SCHEMAS.includes(d.schema as (typeof SCHEMAS)[number]), path, `schema must be one of ${SCHEMAS.join(', ')}, not ${JSON.stringify(d.schema)}`);
  check(Array.isArray(d.scenarios), path, 'scenarios must be a list');
  const scenarios = d.scenarios as Scenario[];
  for (const [i, s] of scenarios.entries()) {
    const where = `${path}: scenarios[${i}] ${JSON.stringify(s.name)}`;
    check(typeof s.name === 'string' && s.name !== '', where, 'name is required');
    check(Array.isArray(s.namespaces) && Array.isArray(s.pods), where, 'namespaces and pods must be lists');
    const pods = new Set(s.pods.map(podKey));
    const dualStack = new Set(s.pods.filter((p) => p.ip6 !== undefined).map(podKey));
    for (const [j, p] of s.pods.entries()) {
      check(isIPv4(p.ip), `${where}.pods[${j}]`, `ip ${JSON.stringify(p.ip)} is not IPv4`);
      check(p.ip6 === undefined || isIPv6(p.ip6), `${where}.pods[${j}]`, `ip6 ${JSON.stringify(p.ip6)} is not IPv6`);
      check(typeof p.node === 'string' && p.node !== '', `${where}.pods[${j}]`, 'node is required');
    }
    const [nodeProblem] = nodeProblems(s.nodes, s.pods.flatMap((p) => (p.ip6 === undefined ? [p.ip] : [p.ip, p.ip6])));
    check(nodeProblem === undefined, where, nodeProblem ?? '');
    const nodes = nodesByName(s.nodes);
    for (const [k, step] of stepsOf(s).entries()) {
      for (const [j, pr] of step.probes.entries()) {
        const w = `${where} step ${k} probes[${j}]`;
        check(typeof pr.from === 'string' && typeof pr.to === 'string', w, 'from and to must be "ns/pod" or a node\'s name');
        const podEnds = [pr.from, pr.to].filter((e) => !isNodeEndpoint(e));
        check(
          podEnds.every((e) => pods.has(e)),
          w,
          `from/to must name pods of the scenario, or nodes (${pr.from} → ${pr.to})`,
        );
        check(Number.isInteger(pr.port), w, 'port must be a number');
        check(typeof pr.expected === 'boolean', w, 'expected must be true or false');
        check(pr.ipVersion === undefined || pr.ipVersion === 4 || pr.ipVersion === 6, w, 'ipVersion must be 4 or 6');
        check(pr.ipVersion !== 6 || podEnds.every((e) => dualStack.has(e)), w, `ipVersion 6 needs ip6 on ${podEnds.length === 2 ? 'both pods' : `pod ${podEnds[0]}`} (${pr.from} → ${pr.to})`);
        const problem = probeNodeProblem(pr, nodes);
        check(problem === undefined, w, problem ?? '');
      }
    }
  }
  return { path, schema: d.schema as string, scenarios };
}

/** Files named on the command line: a file, or every *.json in a directory (sorted). */
export function loadScenarioFiles(paths: readonly string[]): ScenarioFile[] {
  const files: string[] = [];
  for (const p of paths) {
    if (statSync(p).isDirectory()) {
      for (const f of readdirSync(p).filter((n) => n.endsWith('.json')).sort()) files.push(join(p, f));
    } else {
      files.push(p);
    }
  }
  const loaded = files.map((f) => parseScenarioFile(f, readFileSync(f, 'utf8')));
  const seen = new Map<string, string>();
  for (const f of loaded) {
    for (const s of f.scenarios) {
      const other = seen.get(s.name);
      if (other !== undefined && other !== f.path) throw new ScenarioFileError(`${f.path}: scenario ${JSON.stringify(s.name)} is also in ${other}`);
      seen.set(s.name, f.path);
    }
  }
  return loaded;
}
