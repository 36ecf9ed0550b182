/**
 * The scenario runner: `npm run e2e -- --scenarios <file|dir> [--scenarios …]`.
 *
 * Starts a real control plane (or reuses one: `--kubeconfig <admin kubeconfig>`), applies
 * manifests/, runs `tessera controllers` and one `tessera agent` per node named in the files,
 * then runs every scenario (run-scenario.ts) and prints, per scenario, its verdict and a table
 * of mismatches (from, to, port/proto, expected, got). The LAST line of stdout is JSON:
 * {"scenarios":N,"probes":N,"passed":N,"failed":N,"skipped":N}. Exit status 1 on any failed
 * probe or scenario error, 2 on bad arguments or files. Everything it created is removed,
 * also after a failure or an interrupt (SIGINT/SIGTERM).
 *
 * Scenario `nodes` ("Hosts as endpoints") are made endpoints per scenario (run-scenario.ts): a
 * node with an IPv6 address of its own is started dual-stack, like a node hosting a dual-stack
 * pod. e2e/runner/testdata/hosts-as-endpoints.json is the runner's own check of them.
 *
 * Kubernetes namespaces are `<scenario name>-<run id>` (namespace-names.ts), one mapping for the
 * whole invocation, logged once; the output names the scenarios' own namespaces. After the
 * clean-up the runner checks that no namespace of its run is left (exit status 1 otherwise).
 *
 * Options: --only <name> (repeatable) runs only those scenarios; --kubeconfig <file>;
 * --probe-timeout <ms> (default 400); --settle <ms> (default 15000); --host-veth-naming
 * calico|veth (default calico): `veth` names host veths as kindnet and ptp do, and runs the
 * controllers with `--workload-interface-naming none` and the agents with
 * `--interface-prefix veth`, so every agent finds its pods' interfaces from their routes
 * (cluster.ts). --typha <n> (default 0) runs n `tessera typha` processes and connects every
 * agent through them instead of to the API server. With TESSERA_E2E_COMPILED=1 the controllers and agents run the compiled build
 * (bin/tessera.js → dist/, as the image does; processes.ts) instead of the sources via tsx.
 *
 * --cluster kind runs the same scenarios on the kind cluster of e2e/kind (`make kind-up`, Tessera
 * installed by e2e/kind/deploy.sh; --kubeconfig defaults to the one kind-up wrote): real pods
 * from the probe-server image on real kubelets, probed from inside (kind-cluster.ts). The
 * process-only options (--host-veth-naming, --typha) do not apply there.
 */
import { readFileSync } from 'node:fs';

import { registerExitCleanup } from '../controlplane/exit-cleanup.ts';
import { locateBinaries } from '../controlplane/index.ts';
import { E2eCluster } from './cluster.ts';
import { KindCluster } from './kind-cluster.ts';
import { HOST_VETH_NAMINGS, type HostVethNaming } from './network.ts';
import { mismatchTable } from './mismatch-table.ts';
import { NamespaceNames } from './namespace-names.ts';
import { cleanupNamespaces, cleanupNamespacesSync, namespacesOfRun, ScenarioRun, type ProbeResult } from './run-scenario.ts';
import { loadScenarioFiles, nodeAddress, ScenarioFileError, scenarioNodes, type Scenario } from './scenario.ts';

interface Args {
  scenarios: string[];
  only: string[];
  kubeconfig: string | undefined;
  probeTimeoutMs: number;
  settleMs: number;
  hostVethNaming: HostVethNaming;
  typhas: number;
  cluster: 'processes' | 'kind';
}

function parseArgs(argv: readonly string[]): Args {
  const a: Args = { scenarios: [], only: [], kubeconfig: undefined, probeTimeoutMs: 400, settleMs: 15_000, hostVethNaming: 'calico', typhas: 0, cluster: 'processes' };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new ScenarioFileError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--':
        break;
      case '--scenarios':
        a.scenarios.push(value());
        break;
      case '--only':
        a.only.push(value());
        break;
      case '--kubeconfig':
        a.kubeconfig = value();
        break;
      case '--probe-timeout':
        a.probeTimeoutMs = Number(value());
        break;
      case '--settle':
        a.settleMs = Number(value());
        break;
      case '--host-veth-naming': {
        const v = value();
        if (!(HOST_VETH_NAMINGS as readonly string[]).includes(v)) throw new ScenarioFileError(`--host-veth-naming must be ${HOST_VETH_NAMINGS.join(' or ')}, not ${JSON.stringify(v)}`);
        a.hostVethNaming = v as HostVethNaming;
        break;
      }
      case '--typha': {
        const v = value();
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0 || n > 8) throw new ScenarioFileError(`--typha must be a number of Typhas from 0 to 8, not ${JSON.stringify(v)}`);
        a.typhas = n;
        break;
      }
      case '--cluster': {
        const v = value();
        if (v !== 'processes' && v !== 'kind') throw new ScenarioFileError(`--cluster must be processes or kind, not ${JSON.stringify(v)}`);
        a.cluster = v;
        break;
      }
      default:
        throw new ScenarioFileError(`unknown argument ${JSON.stringify(flag)}`);
    }
  }
  if (a.scenarios.length === 0) throw new ScenarioFileError('--scenarios <file|dir> is required');
  if (a.cluster === 'kind' && (a.typhas > 0 || a.hostVethNaming !== 'calico')) throw new ScenarioFileError('--typha and --host-veth-naming run processes; with --cluster kind the installed manifests decide');
  return a;
}

const err = (line: string): void => void process.stderr.write(`${line}\n`);

/** An agent's resident memory and its CPU use over `secs` (from /proc; Linux only). */
function agentUsage(pid: number, secs: number): string {
  try {
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const cpuSecs = (Number(f[11]) + Number(f[12])) / 100;
    return `RSS ${rss.toFixed(0)} MiB, CPU ${cpuSecs.toFixed(1)} s (${((100 * cpuSecs) / secs).toFixed(1)}% over ${secs.toFixed(0)} s)`;
  } catch {
    return 'not measurable';
  }
}

async function main(argv: readonly string[]): Promise<number> {
  let args: Args;
  let scenarios: Scenario[];
  try {
    args = parseArgs(argv);
    scenarios = loadScenarioFiles(args.scenarios).flatMap((f) => [...f.scenarios]);
  } catch (e) {
    if (!(e instanceof ScenarioFileError)) throw e;
    err(`e2e: ${e.message}`);
    return 2;
  }
  if (args.only.length > 0) scenarios = scenarios.filter((s) => args.only.includes(s.name));
  const t0 = Date.now();
  const totals = { scenarios: 0, probes: 0, passed: 0, failed: 0, skipped: 0 };
  let errors = 0;
  const names = NamespaceNames.of(scenarios);
  err(`run ${names.runId}: Kubernetes namespaces ${[...names.mapping].map(([from, to]) => `${from}→${to}`).join(', ')}`);
  let cluster: E2eCluster | KindCluster;
  if (args.cluster === 'kind') {
    cluster = await KindCluster.connect({ ...(args.kubeconfig === undefined ? {} : { kubeconfig: args.kubeconfig }), log: err });
  } else {
    err(`run ${names.runId}: tessera ${process.env['TESSERA_E2E_COMPILED'] === '1' ? 'compiled (dist/)' : 'from the sources (tsx)'}`);
    err(`run ${names.runId}: host veths named like ${args.hostVethNaming === 'calico' ? "Calico's CNI (cali<hash>)" : 'kindnet/ptp (veth<random>): agents resolve interfaces from routes'}`);
    // A node hosting a dual-stack pod gets an IPv6 address, so its agent detects and polices
    // IPv6: without it the pods' IPv6 traffic crosses an unpoliced node and every ipVersion 6
    // probe is allowed whatever the policy says.
    // A scenario node with an IPv6 address of its own likewise.
    const dualStackNodes = [...new Set(scenarios.flatMap((s) => [...s.pods.filter((p) => p.ip6 !== undefined).map((p) => p.node), ...(s.nodes ?? []).filter((n) => nodeAddress(n, 6) !== undefined).map((n) => n.name)]))];
    cluster = await E2eCluster.start({ ...(args.kubeconfig === undefined ? {} : { kubeconfig: args.kubeconfig }), hostVethNaming: args.hostVethNaming, typhas: args.typhas, dualStackNodes, log: err });
  }
  const namespaces = new Set<string>();
  const kubeconfig = cluster instanceof KindCluster ? cluster.kubeconfigPath : args.kubeconfig;
  const unregister = kubeconfig === undefined ? () => undefined : registerExitCleanup(() => cleanupNamespacesSync(locateBinaries().kubectl, kubeconfig, namespaces));
  try {
    await cluster.ensureNodes([...new Set(scenarios.flatMap((s) => scenarioNodes(s)))]);
    err(`cluster ready in ${Date.now() - t0} ms`);
    for (const s of scenarios) {
      const ts = Date.now();
      totals.scenarios++;
      for (const ns of s.namespaces) namespaces.add(names.unique(ns.name));
      let results: ProbeResult[] = [];
      let failure: unknown;
      try {
        results = await new ScenarioRun(cluster, s, { probeTimeoutMs: args.probeTimeoutMs, settleMs: args.settleMs, names }).run();
      } catch (e) {
        failure = e;
        errors++;
      }
      const skipped = results.filter((r) => r.got === undefined);
      const bad = results.filter((r) => r.got !== undefined && r.got !== r.probe.expected);
      totals.probes += results.length;
      totals.skipped += skipped.length;
      totals.failed += bad.length;
      totals.passed += results.length - skipped.length - bad.length;
      const verdict = failure !== undefined ? 'ERROR' : bad.length > 0 ? 'FAIL' : 'ok';
      console.log(`${verdict.padEnd(5)} ${s.name} (${results.length} probes, ${skipped.length} skipped, ${Date.now() - ts} ms)`);
      if (bad.length > 0) console.log(mismatchTable(bad));
      if (failure !== undefined) console.log(`    ${String((failure as Error).stack ?? failure).split('\n').slice(0, 4).join('\n    ')}`);
    }
    if (cluster instanceof KindCluster) {
      for (const u of await cluster.agentUsage()) err(`agent pod on ${u.node}: RSS ${u.rssMiB.toFixed(0)} MiB, CPU ${u.cpuSeconds.toFixed(1)} s since it started ${(Date.now() / 1000 - u.startTime).toFixed(0)} s ago`);
    } else {
      for (const [node, agent] of cluster.agents) err(`agent ${node}: ${agentUsage(agent.child.pid ?? 0, (Date.now() - t0) / 1000)}`);
    }
  } finally {
    await cleanupNamespaces(cluster, namespaces).catch((e: unknown) => err(`e2e: namespace clean-up failed: ${String(e)}`));
    const left = await namespacesOfRun(cluster, names.runId).catch((e: unknown) => [`(could not list: ${String(e)})`]);
    if (left.length > 0) errors++;
    err(`run ${names.runId}: ${namespaces.size} Kubernetes namespaces created, ${left.length === 0 ? 'none left' : `LEFT: ${left.join(', ')}`}`);
    unregister();
    await cluster.close();
  }
  err(`e2e wall time ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(JSON.stringify(totals));
  return totals.failed > 0 || errors > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
