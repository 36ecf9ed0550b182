/**
 * Runs a test plan (from an expander) through a fresh `CalcGraph` and a `MockDataplane`
 * with one flush strategy, checking the full dataplane state after every state (or, for
 * `onlyAtEnd`, after the last). The graph is told `in-sync` only after the first state's
 * updates, so every strategy also checks that nothing is emitted before in-sync.
 */
import type { V3Resource } from '../../src/api/index.ts';
import { CalcGraph } from '../../src/calc/calc-graph.ts';
import { MockDataplane, type DataplaneSnapshot } from './mock-dataplane.ts';
import { expectedSnapshot, type FlushStrategy, type Step } from './state.ts';

export const LOCAL_NODE = 'local-host';

/** A graph on {@link LOCAL_NODE} given `resources` and told in-sync, and the dataplane its first flush built. */
export function graphWith(resources: readonly V3Resource[]): { graph: CalcGraph; dp: MockDataplane } {
  const graph = new CalcGraph({ nodeName: LOCAL_NODE });
  const dp = new MockDataplane();
  graph.onUpdates(resources.map((resource) => ({ op: 'upsert', resource })));
  graph.onStatusUpdated('in-sync');
  dp.graphInSync = true;
  dp.apply(graph.flush());
  return { graph, dp };
}

export type Check = (got: DataplaneSnapshot, want: DataplaneSnapshot, stateName: string) => void;

export function runPlan(steps: readonly Step[], strategy: FlushStrategy, check: Check): MockDataplane {
  const graph = new CalcGraph({ nodeName: LOCAL_NODE });
  const dp = new MockDataplane();
  graph.onStatusUpdated('resync-in-progress');
  const flush = (): void => dp.apply(graph.flush());
  steps.forEach((step, i) => {
    switch (strategy) {
      case 'afterEveryKV':
        for (const u of step.updates) {
          graph.onUpdates([u]);
          flush();
        }
        break;
      case 'afterEveryKVTwice':
        for (const u of step.updates) {
          graph.onUpdates([u]);
          flush();
          graph.onUpdates([u]);
          flush();
        }
        break;
      case 'oncePerState':
      case 'onlyAtEnd':
        graph.onUpdates(step.updates);
        break;
    }
    if (i === 0) {
      flush(); // still before in-sync: the mock fails on any output
      graph.onStatusUpdated('in-sync');
      dp.graphInSync = true;
    }
    if (strategy !== 'onlyAtEnd') {
      flush();
      check(dp.snapshot(), expectedSnapshot(step.expect), step.expect.name);
    }
  });
  flush();
  const last = steps[steps.length - 1];
  if (last !== undefined) check(dp.snapshot(), expectedSnapshot(last.expect), last.expect.name);
  if (steps.length > 0 && !dp.receivedInSync) throw new Error('no InSync message after the first flush following in-sync');
  return dp;
}
