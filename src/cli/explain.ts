/**
 * `tessera explain --from ns/pod --to ns/pod --port 80 [--protocol TCP]` with `-f <files>`
 * or `--kubeconfig <file>`: why a connection is allowed or dropped. Prints the source's
 * egress walk (on its node) and the destination's ingress walk (on its node), tier by tier
 * and policy by policy, naming the deciding rule (or end of tier, or profile) and, for each
 * earlier rule, the first criterion that failed. `--output json` prints the verdict with
 * its structured trace. Exit 0 when explained (allowed or not), 1 when a pod has no
 * endpoint, 2 on a usage error, 3 when the input cannot be used (exit-status.ts).
 */
import { describeMissingTierPolicy, missingTierMessage, policiesInMissingTiers } from '../calc/index.ts';
import { describeVerdict, IpSetNames, Simulation, translateCluster } from '../simulate/index.ts';
import { EXIT_FAILED } from './exit-status.ts';
import { exitStatusFor, loadCluster, parseSimulatorArgs, processOutput, UsageError, type CliOutput } from './simulate.ts';

const USAGE = `usage: tessera explain --from <ns/pod> --to <ns/pod> --port <n> [--protocol TCP|UDP|SCTP]
                       (-f <file|dir>... | --kubeconfig <file>) [--output text|json] [--skip-invalid]

Explains the verdict for one connection with the node agent's own engine: the source's
egress walk and the destination's ingress walk, naming the rule that decided.
--skip-invalid leaves invalid objects out (a note each on stderr), as the agent would.

Exit status: 0 explained (allowed or denied); 1 a pod has no workload endpoint; 2 usage
error; 3 input not usable — an unreadable file or directory, a YAML syntax error
(file:line:column), an unreachable API server, a list the API server refused (401/403), an
invalid object without --skip-invalid. The reason is on stderr.
`;

const FLAGS = new Set(['--filename', '--kubeconfig', '--output', '--port', '--protocol', '--from', '--to', '--skip-invalid']);

export async function runExplain(argv: readonly string[], out: CliOutput = processOutput): Promise<number> {
  try {
    const a = parseSimulatorArgs(argv, FLAGS);
    if (a === 'help') {
      out.stdout(USAGE);
      return 0;
    }
    if (a.from === undefined || a.to === undefined) throw new UsageError('--from and --to are required (ns/pod)');
    const output = a.output === 'table' ? 'text' : a.output;
    if (output !== 'text' && output !== 'json') throw new UsageError(`--output must be text or json, not ${JSON.stringify(a.output)}`);
    const notes: string[] = [];
    const translated = translateCluster(await loadCluster(a, notes), { skipInvalid: a.skipInvalid });
    notes.push(...translated.notes);
    // The default tiers are among the resources (translateCluster adds them), as in a cluster.
    const missing = policiesInMissingTiers(translated.resources.values());
    for (const p of missing) notes.push(`${describeMissingTierPolicy(p)}: ${missingTierMessage(p.tier)}`);
    const sim = new Simulation(translated.resources);
    const missingTiers = new Set(missing.map((p) => p.tier));
    return explainOne(sim, new IpSetNames(translated.resources.values()), a.from, a.to, a.protocol, a.port, output, out, notes, missingTiers);
  } catch (err) {
    return exitStatusFor('explain', err, USAGE, out);
  }
}

/** Explains one flow on a built simulation (also used by the demo). */
export function explainOne(
  sim: Simulation,
  names: IpSetNames,
  fromId: string,
  toId: string,
  protocol: 'TCP' | 'UDP' | 'SCTP',
  port: number,
  output: 'text' | 'json',
  out: CliOutput,
  notes: readonly string[] = [],
  missingTiers: ReadonlySet<string> = new Set(),
): number {
  for (const n of notes) out.stderr(`note: ${n}\n`);
  const from = sim.endpointFor(fromId);
  const to = sim.endpointFor(toId);
  if (from === undefined || to === undefined) {
    const missing = from === undefined ? fromId : toId;
    out.stderr(`tessera explain: no workload endpoint for ${missing} (known: ${sim.endpoints.map((e) => e.id).join(', ') || 'none'})\n`);
    return EXIT_FAILED;
  }
  const v = sim.verdict(from, to, protocol, port, true);
  if (output === 'json') out.stdout(`${JSON.stringify({ from: fromId, to: toId, protocol, port, ...v }, null, 1)}\n`);
  else out.stdout(`${describeVerdict(from, to, protocol, port, v, names, missingTiers).join('\n')}\n`);
  return 0;
}
