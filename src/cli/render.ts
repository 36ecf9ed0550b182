/**
 * `tessera render --node <name> -f <file|dir>...`: the exact `ipset restore` and
 * `iptables-restore` input the agent would apply on that node, on a fresh host, with the
 * agent's default options (the drop log on; staged policies' counting chains included).
 *
 * Nothing is re-rendered here: the node's calc graph output is sent to the real
 * `DataplaneDriver`, whose command runner records the restore transactions (and answers the
 * read-backs as an empty kernel would), and those inputs are printed: first the ipset input,
 * then the iptables input (the driver's backend: `iptables-nft-restore --noflush`; the filter
 * table, then the raw table's anti-spoofing chains), each
 * preceded by a `# <command line>` comment. A node's host endpoint chains are printed too (the
 * filter, raw and mangle tables): the fresh host has one interface, `eth0`, holding every
 * address the node's HostEndpoints expect. Exit 1 when
 * the node has no endpoints, workload or host (the base
 * chains are still printed), 2 on a usage error, 3 when the input cannot be used
 * (exit-status.ts; nothing is printed then).
 */
import { CalcGraph } from '../calc/index.ts';
import { DataplaneDriver, RecordingCommandRunner } from '../dataplane/index.ts';
import { FakeKernel } from '../dataplane/iptables/fake-kernel.ts';
import type { StagedPolicy, V3Resource } from '../api/index.ts';
import type { DataplaneMessage } from '../proto/index.ts';
import { translateCluster, type SimResource } from '../simulate/index.ts';
import { EXIT_FAILED, reportUnenforced } from './exit-status.ts';
import { usage } from './args.ts';
import { exitStatusFor, loadCluster, processOutput, UsageError, type CliOutput } from './simulate.ts';
import { parseSimulatorArgs, pickFlags } from './simulator-flags.ts';

const FLAGS = pickFlags(['node', 'files', 'kubeconfig', 'skipInvalid'], { node: { description: 'the node whose restore input is printed (required)' } });

const USAGE = usage(
  {
    synopsis: 'tessera render --node <name> (-f <file|dir>... | --kubeconfig <file>) [--skip-invalid]',
    about: `Prints the ipset restore input and the iptables-restore input the node agent would apply
on <name> (a fresh host), produced by the agent's own calc graph and dataplane driver.`,
    footer: `Exit status: 0 rendered; 1 the node has no workload or host endpoints (the base chains are still
printed); 2 usage error; 3 input not usable — an unreadable file or directory, a YAML
syntax error (file:line:column), an unreachable API server, a list the API server refused
(401/403), an invalid object without --skip-invalid. The reason is on stderr.`,
  },
  FLAGS,
);

export interface RenderedNode {
  /** `[command line, stdin]` of each `ipset restore`, in order. */
  readonly ipset: ReadonlyArray<readonly [string, string]>;
  /** `[command line, stdin]` of each iptables restore, in order. */
  readonly iptables: ReadonlyArray<readonly [string, string]>;
  readonly endpoints: number;
}

/**
 * Runs the node's calc graph and the real dataplane driver against a recording, empty kernel,
 * configured as `tessera agent` is by default (the drop log on); staged policies are fed as the
 * agent's informers feed them, so their counting chains are printed too.
 */
export async function renderNode(resources: Iterable<SimResource>, node: string, staged: readonly StagedPolicy[] = []): Promise<RenderedNode> {
  const graph = new CalcGraph({ nodeName: node });
  graph.onUpdates([...resources].map((resource) => ({ op: 'upsert', resource }) as const));
  graph.onUpdates(staged.map((s) => ({ op: 'upsert', resource: stagedDocument(s) }) as const));
  graph.onStatusUpdated('in-sync');
  const messages = graph.flush();
  const kernel = new FakeKernel().handler;
  const iface = renderInterface(messages);
  // The host endpoint manager lists the interfaces: the fresh host has one, RENDER_INTERFACE.
  const runner = new RecordingCommandRunner((call) =>
    call.cmd === 'ip' && call.args.join(' ') === '-j addr show' ? { code: 0, stdout: JSON.stringify([iface]), stderr: '' } : kernel(call),
  );
  const driver = new DataplaneDriver({ runner, dropLog: {} });
  const stop = new AbortController();
  const running = driver.run(stop.signal);
  try {
    driver.send(messages);
    await driver.flushed();
  } finally {
    stop.abort();
    await running;
  }
  const line = (c: { cmd: string; args: readonly string[] }): string => [c.cmd, ...c.args].join(' ');
  return {
    ipset: runner.calls.filter((c) => c.cmd === 'ipset' && c.args[0] === 'restore').map((c) => [line(c), c.stdin ?? ''] as const),
    iptables: runner.calls.filter((c) => /^ip6?tables-(nft|legacy)-restore$/.test(c.cmd)).map((c) => [line(c), c.stdin ?? ''] as const),
    // A node whose only endpoints are host endpoints has chains of its own to print.
    endpoints: messages.filter((m) => m.type === 'WorkloadEndpointUpdate' || m.type === 'HostEndpointUpdate').length,
  };
}

/** The one host interface `render` gives the node (what `ip -j addr show` lists). */
export const RENDER_INTERFACE = 'eth0';

/**
 * The node's interface as `ip -j addr show` prints it: {@link RENDER_INTERFACE}, holding every
 * address the node's HostEndpoints expect (so an endpoint matched by expectedIPs, or named
 * `eth0`, has its chains printed; a `*` one needs no interface).
 */
function renderInterface(messages: readonly DataplaneMessage[]): { ifname: string; addr_info: Array<{ family: string; local: string }> } {
  const addrs = new Set<string>();
  for (const m of messages) if (m.type === 'HostEndpointUpdate') for (const a of [...m.endpoint.expectedIpv4Addrs, ...m.endpoint.expectedIpv6Addrs]) addrs.add(a);
  return { ifname: RENDER_INTERFACE, addr_info: [...addrs].sort().map((local) => ({ family: local.includes(':') ? 'inet6' : 'inet', local })) };
}

/** The staged object as the API server serves it (what the agent's update processor reads). */
function stagedDocument(s: StagedPolicy): V3Resource {
  const c = s.counterpart as { metadata?: object; spec?: object };
  return { apiVersion: 'projectcalico.org/v3', kind: s.kind, metadata: c.metadata ?? { name: s.name }, spec: { ...(c.spec ?? {}), stagedAction: s.action } } as unknown as V3Resource;
}

export async function runRender(argv: readonly string[], out: CliOutput = processOutput): Promise<number> {
  try {
    const a = parseSimulatorArgs(argv, FLAGS);
    if (a === 'help') {
      out.stdout(USAGE);
      return 0;
    }
    if (a.node === undefined || a.node === '') throw new UsageError('--node is required');
    const notes: string[] = [];
    const objs = await loadCluster(a, notes);
    const translated = translateCluster(objs, { skipInvalid: a.skipInvalid });
    for (const n of [...notes, ...translated.notes]) out.stderr(`note: ${n}\n`);
    for (const w of translated.warnings) out.stderr(`warning: ${w}\n`);
    const r = await renderNode(translated.resources.values(), a.node, objs.staged ?? []);
    for (const [cmd, stdin] of r.ipset) out.stdout(`# ${cmd}\n${stdin}${stdin.endsWith('\n') ? '' : '\n'}`);
    for (const [cmd, stdin] of r.iptables) out.stdout(`# ${cmd}\n${stdin}${stdin.endsWith('\n') ? '' : '\n'}`);
    if (r.endpoints === 0) {
      out.stderr(`tessera render: node ${a.node} has no workload endpoints (nor host endpoints) in the input; printed the base chains only\n`);
      return reportUnenforced(objs.unenforced ?? [], out, EXIT_FAILED);
    }
    return reportUnenforced(objs.unenforced ?? [], out, 0);
  } catch (err) {
    return exitStatusFor('render', err, USAGE, out);
  }
}
