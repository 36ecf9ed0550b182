/**
 * `tessera simulate`: connectivity verdicts from the agent's own engine, without a cluster.
 *
 *   tessera simulate -f <file|dir>... [--port 80] [--protocol TCP] [--output table|json|html]
 *   tessera simulate --scenarios <file|dir>... [--output table|json]
 *
 * With `-f` (or `--kubeconfig`) it prints the pod × pod matrix for one port. With
 * `--scenarios` it checks every probe (and every step's probes) against `expected`, prints
 * each mismatch with its explanation, and ends with one JSON line
 * `{"scenarios":N,"probes":N,"passed":N,"failed":N}`; the exit status is 1 on any mismatch.
 * Notes (skipped pods, dropped rules, kinds the API server does not serve) go to stderr.
 * Exit 2 on a usage error, 3 when the input cannot be used (exit-status.ts): an unreadable
 * file, a YAML syntax error, an unreachable API server, a forbidden list, an invalid object
 * (unless `--skip-invalid`) — never an empty or partial matrix with status 0. Exit 4 when the
 * input holds a policy kind Tessera does not enforce (an AdminNetworkPolicy):
 * each is named on stderr as `NOT ENFORCED: …`, after the answer that leaves it out. The
 * warnings `tessera validate` prints (an `http` match, QoS limits) are on stderr too.
 */
import { processOutput, usage, UsageError, type CliOutput } from './args.ts';
import { agentOptions, parseSimulatorArgs, pickFlags, type SimulatorArgs } from './simulator-flags.ts';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

import { fileProblem, InputError, type InputProblem } from '../runtime/input-error.ts';
import { isManifestProblem, listManifestFiles, parseManifests } from '../runtime/manifest-files.ts';
import { EXIT_FAILED, EXIT_USAGE, reportInputError, reportUnenforced } from './exit-status.ts';
import type { UnenforcedObject } from '../api/unenforced-kinds.ts';
import {
  applyStep,
  commitStaged,
  previewedStaged,
  describeStagedDiff,
  describeVerdict,
  endpointInFamily,
  initialState,
  IpSetNames,
  isNodeEndpoint,
  loadFromCluster,
  loadFromFiles,
  parseScenarioFile,
  ScenarioFormatError,
  Simulation,
  stagedDiff,
  stateObjects,
  translateCluster,
  type ClusterObjects,
  type StagedDiff,
  type ScenarioProbe,
  type SimPeer,
} from '../simulate/index.ts';
import { renderReport } from './report.ts';

export { processOutput, type CliOutput };

export { UsageError };

/**
 * Reads the kubeconfig at `file`.
 * @throws InputError when it cannot be read or parsed, or names no current cluster.
 */
export async function readKubeConfig(file: string): Promise<KubeConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new InputError([fileProblem({ source: { file }, reason: (err as Error).message })], { cause: err });
  }
  // client-node reports a syntax error without its position: find it as a manifest's is.
  const syntax = parseManifests(text, file).find(isManifestProblem);
  if (syntax !== undefined) throw new InputError([fileProblem(syntax)]);
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
    kc.makePathsAbsolute(path.dirname(file));
  } catch (err) {
    throw new InputError([{ type: 'file', file, reason: `not a kubeconfig: ${(err as Error).message}` }], { cause: err });
  }
  if (kc.getCurrentCluster() === null) {
    throw new InputError([{ type: 'file', file, reason: `not a kubeconfig: no cluster for current-context ${JSON.stringify(kc.getCurrentContext())}` }]);
  }
  return kc;
}

/** Loads `-f` files or the `--kubeconfig` cluster; notes go to `notes`. @throws InputError */
export async function loadCluster(a: SimulatorArgs, notes: string[]): Promise<ClusterObjects> {
  if (a.kubeconfig !== undefined) return loadFromCluster(await readKubeConfig(a.kubeconfig), notes);
  if (a.files.length === 0) throw new UsageError('no input: give -f <file|dir> (or --kubeconfig, or --scenarios)');
  return loadFromFiles(a.files, notes, { skipInvalid: a.skipInvalid });
}

/**
 * The exit status for what a command threw: `UsageError` → 2 with the usage text,
 * `InputError` → 3 with one line per problem; anything else is a bug and propagates.
 */
export function exitStatusFor(command: string, err: unknown, usage: string, out: CliOutput): number {
  if (err instanceof InputError) return reportInputError(command, err, out);
  if (!(err instanceof UsageError)) throw err;
  out.stderr(`tessera ${command}: ${err.message}\n\n${usage}`);
  return EXIT_USAGE;
}

const FLAGS = pickFlags(['files', 'kubeconfig', 'scenarios', 'port', 'protocol', 'output', 'skipInvalid', 'endpointToHostAction', 'failsafeInbound', 'failsafeOutbound'], {
  output: { description: 'table, json or html (html: the matrix as a page; with --scenarios: table or json)' },
});

const USAGE = usage(
  {
    synopsis: `tessera simulate -f <file|dir>... [--port 80] [--protocol TCP|UDP|SCTP] [--output table|json|html] [--skip-invalid]
       tessera simulate --kubeconfig <file> [--port 80] [--protocol TCP] [--output table|json|html] [--skip-invalid]
       tessera simulate --scenarios <file|dir>... [--output table|json] [--skip-invalid]`,
    about: `Decides connectivity with the node agent's own engine (controllers' builders → calc graph
per node → the dataplane's rule semantics). With -f or --kubeconfig: the pod × pod matrix
for one port. With --scenarios: every probe against its expected verdict; mismatches are
explained, the last line is {"scenarios":N,"probes":N,"passed":N,"failed":N}.`,
    footer: `Exit status: 0 done (every probe as expected); 1 a scenario mismatch; 2 usage error;
3 input not usable — an unreadable file or directory, a YAML syntax error (file:line:column),
an unreachable API server, a list the API server refused (401/403), an invalid object
without --skip-invalid. The reason is on stderr; a kind the server does not serve (404,
e.g. no Calico CRDs) is only a note. 4 the input holds a policy kind Tessera does not
enforce (AdminNetworkPolicy…): each is named on stderr (NOT ENFORCED), and
the verdicts printed leave it out. Warnings (an http match, QoS limits) are on stderr too.`,
  },
  FLAGS,
);

export async function runSimulate(argv: readonly string[], out: CliOutput = processOutput): Promise<number> {
  let a;
  try {
    a = parseSimulatorArgs(argv, FLAGS);
    if (a === 'help') {
      out.stdout(USAGE);
      return 0;
    }
    if (a.scenarios.length > 0 && (a.files.length > 0 || a.kubeconfig !== undefined)) throw new UsageError('give either --scenarios or -f/--kubeconfig, not both');
    const outputs = a.scenarios.length > 0 ? ['table', 'json'] : ['table', 'json', 'html'];
    if (!outputs.includes(a.output)) throw new UsageError(`--output must be ${outputs.join(', ')}, not ${JSON.stringify(a.output)}`);
    if (a.scenarios.length > 0) return await runScenarios(a, out);
    const notes: string[] = [];
    const objs = await loadCluster(a, notes);
    const translated = translateCluster(objs, { skipInvalid: a.skipInvalid });
    notes.push(...translated.notes);
    for (const n of notes) out.stderr(`note: ${n}\n`);
    for (const w of translated.warnings) out.stderr(`warning: ${w}\n`);
    const unenforced = objs.unenforced ?? [];
    const done = (): number => reportUnenforced(unenforced, out, 0);
    const sim = new Simulation(translated.resources, agentOptions(a));
    const staged = previewedStaged(objs.staged ?? []);
    // The same cluster as if every staged policy were committed: never enforced, only compared.
    const committed = staged.length === 0 ? undefined : translateCluster(commitStaged(objs, staged), { skipInvalid: a.skipInvalid });
    const stagedSim = committed === undefined ? undefined : new Simulation(committed.resources, agentOptions(a));
    if (a.output === 'html') {
      const stagedView = committed === undefined || stagedSim === undefined ? undefined : { policies: staged, sim: stagedSim, resources: committed.resources };
      out.stdout(renderReport(sim, translated.resources, a.protocol, a.port, stagedView));
      return done();
    }
    const allowed = sim.matrix(a.protocol, a.port);
    let diff: StagedDiff | undefined;
    if (stagedSim !== undefined) diff = stagedDiff(sim.endpoints.map((e) => e.id), allowed, stagedSim.matrix(a.protocol, a.port), staged.length);
    if (a.output === 'json') {
      const extra = { ...(diff === undefined ? {} : { staged: diff }), ...(translated.warnings.length === 0 ? {} : { warnings: translated.warnings }), ...(unenforced.length === 0 ? {} : { unenforced }) };
      out.stdout(`${JSON.stringify({ ...(matrixJson(sim, allowed, a.protocol, a.port, notes) as object), ...extra }, null, 1)}\n`);
    } else out.stdout(formatMatrix(sim, allowed, a.protocol, a.port) + (diff === undefined ? '' : `${describeStagedDiff(diff).join('\n')}\n`));
    return done();
  } catch (err) {
    return exitStatusFor('simulate', err, USAGE, out);
  }
}

export function matrixJson(sim: Simulation, allowed: readonly (readonly boolean[])[], protocol: string, port: number, notes: readonly string[]): unknown {
  const pods = sim.endpoints.map((e) => e.id);
  let n = 0;
  for (const row of allowed) for (const c of row) if (c) n++;
  return { protocol, port, pods, allowed, summary: { pairs: pods.length * (pods.length - 1), allowed: n, denied: pods.length * (pods.length - 1) - n }, notes };
}

/** The matrix as text: rows are sources, columns destinations (numbered), `·` the diagonal. */
export function formatMatrix(sim: Simulation, allowed: readonly (readonly boolean[])[], protocol: string, port: number): string {
  const eps = sim.endpoints;
  const lines: string[] = [];
  const nodes = new Set(eps.map((e) => e.node));
  lines.push(`${protocol}/${port}: ${eps.length} pods on ${nodes.size} node${nodes.size === 1 ? '' : 's'}. Row = from, column = to; ✓ allowed, ✗ denied, · self (not probed).`);
  const w = Math.max(4, ...eps.map((e, i) => `${i + 1} ${e.id}`.length));
  const cw = String(eps.length).length + 1;
  lines.push(`${'from \\ to'.padEnd(w)} ${eps.map((_, j) => String(j + 1).padStart(cw)).join('')}`);
  let n = 0;
  eps.forEach((e, i) => {
    const row = allowed[i] ?? [];
    const cells = eps.map((_, j) => (i === j ? '·' : row[j] === true ? '✓' : '✗').padStart(cw)).join('');
    for (const c of row) if (c) n++;
    lines.push(`${`${String(i + 1).padStart(String(eps.length).length)} ${e.id}`.padEnd(w)} ${cells}`);
  });
  const pairs = eps.length * (eps.length - 1);
  lines.push(`${n} of ${pairs} pairs allowed, ${pairs - n} denied.`);
  return `${lines.join('\n')}\n`;
}

/** The scenario files under `inputs`. @throws InputError naming every path that cannot be read */
async function scenarioFiles(inputs: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  const problems: InputProblem[] = [];
  for (const input of inputs) {
    try {
      files.push(...(await listManifestFiles(input)).filter((f) => f === input || f.endsWith('.json')));
    } catch (err) {
      problems.push(fileProblem({ source: { file: input }, reason: (err as Error).message }));
    }
  }
  if (problems.length > 0) throw new InputError(problems);
  return files;
}

/** Reads and parses one scenario file. @throws InputError when it cannot be read or is not a scenario file */
async function readScenarioFile(file: string): Promise<ReturnType<typeof parseScenarioFile>> {
  try {
    return parseScenarioFile(await readFile(file, 'utf8'), file);
  } catch (err) {
    if (err instanceof ScenarioFormatError) {
      const reason = err.message.startsWith(`${file}: `) ? err.message.slice(file.length + 2) : err.message;
      throw new InputError([{ type: 'file', file, reason }], { cause: err });
    }
    throw new InputError([fileProblem({ source: { file }, reason: (err as Error).message })], { cause: err });
  }
}

interface ProbeResult {
  readonly scenario: string;
  readonly step: number;
  readonly probe: ScenarioProbe;
  readonly allowed: boolean | undefined;
  readonly passed: boolean;
  readonly reason?: string;
}

async function runScenarios(a: SimulatorArgs, out: CliOutput): Promise<number> {
  const results: ProbeResult[] = [];
  const unenforced: UnenforcedObject[] = [];
  let scenarioCount = 0;
  const mismatchText: string[] = [];
  for (const file of await scenarioFiles(a.scenarios)) {
    const parsed = await readScenarioFile(file);
    for (const s of parsed.scenarios) {
      scenarioCount++;
      const state = initialState(s);
      let sim: Simulation | undefined;
      const steps = [{ probes: s.probes }, ...(s.steps ?? [])];
      for (const [k, step] of steps.entries()) {
        if (k > 0) applyStep(state, step);
        const notes: string[] = [];
        const objs = stateObjects(state, notes);
        const translated = translateCluster(objs, { skipInvalid: a.skipInvalid });
        for (const n of [...notes, ...translated.notes]) out.stderr(`note: ${s.name}${k > 0 ? ` step ${k}` : ''}: ${n}\n`);
        for (const w of translated.warnings) out.stderr(`warning: ${s.name}${k > 0 ? ` step ${k}` : ''}: ${w}\n`);
        unenforced.push(...(objs.unenforced ?? []));
        // A scenario's nodes are flow ends; each node's single interface holds its addresses.
        if (sim === undefined) sim = new Simulation(translated.resources, { ...agentOptions(a), hosts: (s.nodes ?? []).map((n) => ({ name: n.name, addresses: [n.ip, ...(n.ip6 === undefined ? [] : [n.ip6])] })) });
        else sim.update(translated.resources);
        let names: IpSetNames | undefined;
        for (const probe of step.probes ?? []) {
          // The probe's address family (scenario-file.ts checked that IPv6 has both pods' ip6).
          const family = probe.ipVersion ?? 4;
          const current = sim;
          // A probe end without `/` is a node (scenario-nodes.ts), addressed in the probe's family.
          const endOf = (id: string): { known: boolean; peer: SimPeer | undefined } => {
            if (isNodeEndpoint(id)) return { known: true, peer: current.hostFor(id, family) };
            const ep = current.endpointFor(id);
            return { known: ep !== undefined, peer: ep === undefined ? undefined : endpointInFamily(ep, family) };
          };
          const fromEnd = endOf(probe.from);
          const toEnd = endOf(probe.to);
          const from = fromEnd.peer;
          const to = toEnd.peer;
          const where = `${s.name}${k > 0 ? ` step ${k}` : ''}`;
          if (from === undefined || to === undefined) {
            const missing = from === undefined ? probe.from : probe.to;
            const why = !(from === undefined ? fromEnd : toEnd).known ? 'no workload endpoint' : `no IPv${family} address`;
            results.push({ scenario: s.name, step: k, probe, allowed: undefined, passed: false, reason: `${why} for ${missing}` });
            mismatchText.push(`MISMATCH ${where}: ${probe.from} → ${probe.to} ${probe.protocol}/${probe.port}${family === 6 ? ' IPv6' : ''}: ${why} for ${missing}`);
            continue;
          }
          const v = sim.verdict(from, to, probe.protocol, probe.port, true);
          const passed = v.allowed === probe.expected;
          results.push({ scenario: s.name, step: k, probe, allowed: v.allowed, passed });
          if (!passed) {
            names ??= new IpSetNames(translated.resources.values());
            mismatchText.push(
              `MISMATCH ${where}: expected ${probe.expected ? 'allowed' : 'denied'}, got ${v.allowed ? 'allowed' : 'denied'}`,
              ...describeVerdict(from, to, probe.protocol, probe.port, v, names).map((l) => `  ${l}`),
            );
          }
        }
      }
    }
  }
  const passed = results.filter((r) => r.passed).length;
  const summary = { scenarios: scenarioCount, probes: results.length, passed, failed: results.length - passed };
  if (a.output === 'json') {
    out.stdout(`${JSON.stringify({ results: results.map((r) => ({ scenario: r.scenario, step: r.step, ...r.probe, allowed: r.allowed ?? null, passed: r.passed, ...(r.reason ? { reason: r.reason } : {}) })) })}\n`);
  } else {
    for (const l of mismatchText) out.stdout(`${l}\n`);
    const byScenario = new Map<string, { p: number; f: number }>();
    for (const r of results) {
      const c = byScenario.get(r.scenario) ?? { p: 0, f: 0 };
      if (r.passed) c.p++;
      else c.f++;
      byScenario.set(r.scenario, c);
    }
    for (const [name, c] of byScenario) out.stdout(`${c.f === 0 ? 'ok  ' : 'FAIL'} ${name}: ${c.p}/${c.p + c.f} probes\n`);
  }
  out.stdout(`${JSON.stringify(summary)}\n`);
  return reportUnenforced(unenforced, out, summary.failed === 0 ? 0 : EXIT_FAILED);
}
