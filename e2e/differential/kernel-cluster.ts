/**
 * The kernel side of the differential test: the fixture's network (fixture-network.ts: nodes
 * and pods as network namespaces, a probe server per pod) with one calc graph and one real
 * `DataplaneDriver` per node programming iptables, ip6tables and IP sets in the node's
 * namespace — the agent's engine, in process.
 *
 * No API server: `apply()` takes the translated resource set (the same one the simulator
 * reads) and feeds each node's graph only what changed, as an agent's syncer would, waits
 * until every driver has programmed the result, and flushes the nodes' conntrack tables (so
 * every probe is judged as a new flow, as the simulator judges it). The drivers take Felix's
 * failsafe ports (fixture.ts FAILSAFES) and the differential's `DefaultEndpointToHostAction`
 * (ENDPOINT_TO_HOST_ACTION), as the verdict engine does. The topology is built once;
 * a round costs one apply plus its probes.
 */
import { CalcGraph } from '../../src/calc/index.ts';
import { DataplaneDriver, NetnsCommandRunner } from '../../src/dataplane/index.ts';
import { BACKEND } from '../dataplane/harness.ts';
import { ENDPOINT_TO_HOST_ACTION, FAILSAFES, NODES } from './fixture.ts';
import { FixtureNetwork, type KernelProbe, type ProbeOptions } from './fixture-network.ts';
import type { AnyUpdate, Update } from '../../src/syncer/index.ts';
import { isEndpointSlice, type SimResource } from '../../src/simulate/index.ts';

export type { KernelProbe, ProbeKind } from './fixture-network.ts';
export type KernelClusterOptions = ProbeOptions;

interface Node {
  readonly graph: CalcGraph;
  readonly driver: DataplaneDriver;
  readonly running: Promise<void>;
}

function deleteUpdate(r: SimResource): Update | AnyUpdate {
  return { op: 'delete', ...(isEndpointSlice(r) ? { apiVersion: r.apiVersion } : {}), kind: r.kind, name: r.metadata.name, ...(r.metadata.namespace !== undefined ? { namespace: r.metadata.namespace } : {}) };
}

export class KernelCluster implements AsyncDisposable {
  private readonly nodes = new Map<string, Node>();
  private readonly stop = new AbortController();
  private current = new Map<string, { readonly json: string; readonly resource: SimResource }>();

  private constructor(readonly net: FixtureNetwork) {}

  /** Builds the namespaces, veths, probe servers and drivers. */
  static async create(opts: KernelClusterOptions = {}): Promise<KernelCluster> {
    const k = new KernelCluster(await FixtureNetwork.create(opts));
    try {
      for (const node of NODES) {
        const driver = new DataplaneDriver({ runner: new NetnsCommandRunner(k.net.nodeNs(node)), backend: BACKEND, ipVersions: [4, 6], endpointToHostAction: ENDPOINT_TO_HOST_ACTION, failsafes: FAILSAFES });
        k.nodes.set(node, { graph: new CalcGraph({ nodeName: node }), driver, running: driver.run(k.stop.signal) });
      }
    } catch (e) {
      await k[Symbol.asyncDispose]();
      throw e;
    }
    return k;
  }

  /**
   * Makes `resources` (keyed as `translateCluster` keys them) the whole state of every node:
   * upserts for new or changed keys, deletes for gone ones, then waits for every driver.
   */
  async apply(resources: ReadonlyMap<string, SimResource>): Promise<void> {
    const next = new Map<string, { json: string; resource: SimResource }>();
    const updates: (Update | AnyUpdate)[] = [];
    for (const [key, resource] of resources) {
      const json = JSON.stringify(resource);
      next.set(key, { json, resource });
      if (this.current.get(key)?.json !== json) updates.push({ op: 'upsert', resource });
    }
    for (const [key, { resource }] of this.current) if (!next.has(key)) updates.push(deleteUpdate(resource));
    this.current = next;
    await Promise.all(
      [...this.nodes.values()].map(async ({ graph, driver }) => {
        graph.onUpdates(updates);
        graph.onStatusUpdated('in-sync');
        driver.send(graph.flush());
        await driver.flushed();
      }),
    );
    this.net.flushConntrack();
  }

  /** Whether `p` gets through; an unanswered probe that `expectAllowed` is retried once, slowly. */
  probe(p: KernelProbe, expectAllowed: boolean): Promise<boolean> {
    return this.net.probe(p, expectAllowed);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.stop.abort();
    await Promise.allSettled([...this.nodes.values()].map((n) => n.running));
    this.net[Symbol.dispose]();
  }
}
