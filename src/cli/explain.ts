/**
 * `tessera explain --from ns/pod --to ns/pod --port 80 [--protocol TCP]` with `-f <files>`
 * or `--kubeconfig <file>`: why a connection is allowed or dropped. Either side may be an IP
 * address outside the cluster instead of a pod: only the pod's direction is then policed, and
 * the explanation names the NetworkSets and GlobalNetworkSets that hold the address. Either
 * side may be a node (by name, or by an address one of its HostEndpoints expects): when host
 * endpoints take part, the explanation lists the path stage by stage and names the stage that
 * dropped the packet — node, table (raw, mangle, filter), chain and HostEndpoint. Prints the source's
 * egress walk (on its node) and the destination's ingress walk (on its node), tier by tier
 * and policy by policy, naming the deciding rule (or end of tier, or profile) and, for each
 * earlier rule, the first criterion that failed. `--output json` prints the verdict with
 * its structured trace. Exit 0 when explained (allowed or not), 1 when a pod has no
 * endpoint, 2 on a usage error, 3 when the input cannot be used (exit-status.ts).
 */
import { describeMissingTierPolicy, missingTierMessage, policiesInMissingTiers } from '../calc/index.ts';
import { formatIP, parseIP } from '../api/index.ts';
import { commitStaged, previewedStaged, describeNetworkSets, describeVerdict, IpSetNames, isEndpoint, isHost, Simulation, translateCluster, type SimPeer } from '../simulate/index.ts';
import { EXIT_FAILED, reportUnenforced } from './exit-status.ts';
import { agentRuleCounts, describeLive, type RuleCountsFetcher } from './explain-live.ts';
import { switchFlag, usage, valueFlag } from './args.ts';
import { exitStatusFor, loadCluster, processOutput, readKubeConfig, UsageError, type CliOutput } from './simulate.ts';
import { agentOptions, parseSimulatorArgs, pickFlags } from './simulator-flags.ts';

/** `<node>=<http(s) URL>` added to the map so far. */
function readAgentUrl(text: string, previous: ReadonlyMap<string, string>): Map<string, string> {
  const eq = text.indexOf('=');
  if (eq <= 0 || !/^https?:\/\//.test(text.slice(eq + 1))) throw new UsageError(`--agent-url must be <node>=<http(s) URL>, not ${JSON.stringify(text)}`);
  return new Map(previous).set(text.slice(0, eq), text.slice(eq + 1));
}

const FLAGS = {
  ...pickFlags(['from', 'to', 'port', 'protocol', 'files', 'kubeconfig', 'output', 'skipInvalid', 'endpointToHostAction', 'failsafeInbound', 'failsafeOutbound'], { output: { description: 'text or json (the verdict with its structured trace)', defaultText: 'text' } }),
  live: switchFlag('--live', "(text output) add the kernel's counters, on the two pods' nodes, of every rule the walks went through: each agent's /rules, through the API server's pod proxy"),
  agentUrls: valueFlag<ReadonlyMap<string, string>>('--agent-url', '<node>=<url>', "with --live: read this node's agent at this URL instead (repeatable)", new Map(), readAgentUrl),
};

const USAGE = usage(
  {
    synopsis: `tessera explain --from <ns/pod|node|IP> --to <ns/pod|node|IP> --port <n> [--protocol TCP|UDP|SCTP]
                       (-f <file|dir>... | --kubeconfig <file>) [--output text|json] [--skip-invalid]
                       [--live [--agent-url <node>=<url>]...]`,
    about: `Explains the verdict for one connection with the node agent's own engine: the source's
egress walk and the destination's ingress walk, naming the rule that decided. One side may
be an IP address outside the cluster: then only the pod's side is policed, and the
NetworkSets and GlobalNetworkSets holding the address are listed. A node (by name, or by an
address its HostEndpoints expect) is its host network namespace; when host endpoints take
part, the path is listed stage by stage, naming the node, table, chain and HostEndpoint that
decided.`,
    footer: `Exit status: 0 explained (allowed or denied); 1 a pod has no workload endpoint; 2 usage
error; 3 input not usable — an unreadable file or directory, a YAML syntax error
(file:line:column), an unreachable API server, a list the API server refused (401/403), an
invalid object without --skip-invalid. The reason is on stderr.`,
  },
  FLAGS,
);

export async function runExplain(argv: readonly string[], out: CliOutput = processOutput, fetchCounts?: RuleCountsFetcher): Promise<number> {
  try {
    const a = parseSimulatorArgs(argv, FLAGS);
    if (a === 'help') {
      out.stdout(USAGE);
      return 0;
    }
    const { live, agentUrls } = a;
    if (agentUrls.size > 0 && !live) throw new UsageError('--agent-url needs --live');
    if (a.from === undefined || a.to === undefined) throw new UsageError('--from and --to are required (ns/pod, or an IP address for one of them)');
    const output = a.output === 'table' ? 'text' : a.output;
    if (output !== 'text' && output !== 'json') throw new UsageError(`--output must be text or json, not ${JSON.stringify(a.output)}`);
    if (live && output !== 'text') throw new UsageError('--live prints text; leave out --output json');
    if (live && a.kubeconfig === undefined && agentUrls.size === 0 && fetchCounts === undefined) throw new UsageError('--live reads the agents of a cluster: give --kubeconfig (or --agent-url <node>=<url>)');
    const notes: string[] = [];
    const objs = await loadCluster(a, notes);
    const translated = translateCluster(objs, { skipInvalid: a.skipInvalid });
    notes.push(...translated.notes);
    // The default tiers are among the resources (translateCluster adds them), as in a cluster.
    const missing = policiesInMissingTiers(translated.resources.values());
    for (const p of missing) notes.push(`${describeMissingTierPolicy(p)}: ${missingTierMessage(p.tier)}`);
    const sim = new Simulation(translated.resources, agentOptions(a));
    const missingTiers = new Set(missing.map((p) => p.tier));
    const staged = previewedStaged(objs.staged ?? []);
    // The same cluster with every staged policy committed: explained after the enforced verdict, never enforced.
    const committed = staged.length === 0 ? undefined : translateCluster(commitStaged(objs, staged), { skipInvalid: a.skipInvalid }).resources;
    const stagedSim = committed === undefined ? undefined : new Simulation(committed, agentOptions(a));
    const names = new IpSetNames(translated.resources.values());
    for (const w of translated.warnings) out.stderr(`warning: ${w}\n`);
    // The staged walk names its IP sets from the committed cluster: a staged rule's selector may be in no enforced policy.
    const code = explainOne(sim, names, a.from, a.to, a.protocol, a.port, output, out, notes, missingTiers, stagedSim, committed === undefined ? undefined : new IpSetNames(committed.values()), translated.failClosed);
    if (code !== 0 || !live) return reportUnenforced(objs.unenforced ?? [], out, code);
    const from = peerFor(sim, a.from)!;
    const to = peerFor(sim, a.to)!;
    const kc = a.kubeconfig === undefined ? undefined : await readKubeConfig(a.kubeconfig);
    const lines = await describeLive(from, to, sim.verdict(from, to, a.protocol, a.port, true), fetchCounts ?? agentRuleCounts(kc, agentUrls));
    out.stdout(`${lines.join('\n')}\n`);
    return reportUnenforced(objs.unenforced ?? [], out, 0);
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
  stagedSim?: Simulation,
  stagedNames: IpSetNames = names,
  failClosed: ReadonlyMap<string, string> = new Map(),
): number {
  for (const n of notes) out.stderr(`note: ${n}\n`);
  const from = peerFor(sim, fromId);
  const to = peerFor(sim, toId);
  if (from === undefined || to === undefined) {
    const missing = from === undefined ? fromId : toId;
    out.stderr(`tessera explain: no workload endpoint for ${missing} (known: ${sim.endpoints.map((e) => e.id).join(', ') || 'none'}; or give an IP address outside the cluster)\n`);
    return EXIT_FAILED;
  }
  if (!isEndpoint(from) && !isEndpoint(to) && !isHost(from) && !isHost(to)) {
    out.stderr(`tessera explain: ${fromId} and ${toId} are both addresses; one side must be a pod (ns/pod) or a node with host endpoints\n`);
    return EXIT_FAILED;
  }
  if (isHost(from) && isHost(to) && from.node === to.node) {
    // A host's traffic to itself goes over loopback; no flow through its interfaces to explain.
    out.stderr(`tessera explain: ${fromId} and ${toId} are both node ${from.node}: self-traffic is not simulated\n`);
    return EXIT_FAILED;
  }
  const v = sim.verdict(from, to, protocol, port, true);
  const external = [from, to].filter((p) => !isEndpoint(p) && !isHost(p));
  const stagedFrom = stagedSim === undefined ? undefined : peerFor(stagedSim, fromId);
  const stagedTo = stagedSim === undefined ? undefined : peerFor(stagedSim, toId);
  const sv = stagedSim === undefined || stagedFrom === undefined || stagedTo === undefined ? undefined : stagedSim.verdict(stagedFrom, stagedTo, protocol, port, true);
  if (output === 'json') {
    const networkSets = Object.fromEntries(external.map((p) => [p.id, sim.networkSetsHolding(p.ip)]));
    const invalid = failClosed.size === 0 ? {} : { failClosed: Object.fromEntries(failClosed) };
    out.stdout(`${JSON.stringify({ from: fromId, to: toId, protocol, port, ...v, ...invalid, ...(external.length === 0 ? {} : { networkSets }), ...(sv === undefined ? {} : { staged: sv }) }, null, 1)}\n`);
  } else {
    const lines = describeVerdict(from, to, protocol, port, v, names, missingTiers, failClosed);
    for (const p of external) lines.push(...describeNetworkSets(p.ip, sim.networkSetsHolding(p.ip)));
    if (sv !== undefined && stagedFrom !== undefined && stagedTo !== undefined) {
      const change = sv.allowed === v.allowed ? 'no change' : sv.allowed ? 'would become ALLOWED' : 'would become DENIED';
      lines.push('', `with the staged policies committed (not enforced): ${sv.allowed ? 'ALLOWED' : 'DENIED'} — ${change}`);
      lines.push(...describeVerdict(stagedFrom, stagedTo, protocol, port, sv, stagedNames, missingTiers).slice(1).map((l) => `  ${l}`));
    }
    out.stdout(`${lines.join('\n')}\n`);
  }
  return 0;
}

/**
 * A pod by `ns/pod`; a node by name (its host network namespace, addressed by its host
 * endpoints' expectedIPs: `Simulation.hostFor`); an IP address — a node's when one of its host
 * endpoints expects it, else outside the cluster; undefined for anything else.
 */
function peerFor(sim: Simulation, id: string): SimPeer | undefined {
  const endpoint = sim.endpointFor(id);
  if (endpoint !== undefined) return endpoint;
  if (!id.includes('/')) {
    const host = sim.hostFor(id);
    if (host !== undefined) return host;
  }
  const ip = parseIP(id);
  if (!ip.ok) return undefined;
  const address = formatIP(ip.value.bytes);
  return sim.hostByAddress(address) ?? { id, ip: address, net: `${address}/${ip.value.version === 4 ? 32 : 128}` };
}
