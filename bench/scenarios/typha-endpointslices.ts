/**
 * What EndpointSlices add to Typha's fan-out under pod churn (`npm run bench --
 * typha-endpointslices`): KVs, raw JSON and compressed wire bytes per pod replacement and agent,
 * with Typha carrying WorkloadEndpoints only, whole slices, and projected slices. Counts, not
 * times (bench/typha-endpointslice-fanout.ts). Sizes from env: AGENTS, SERVICES,
 * PODS_PER_SERVICE, CHURN.
 */
import type { BenchScenario } from '../scenario.ts';
import { measureEndpointSliceFanout } from '../typha-endpointslice-fanout.ts';

const scenario: BenchScenario = {
  description: "what EndpointSlices add to Typha's fan-out under pod churn (KVs and bytes per replacement and agent)",
  includeInDefaultRun: false,
  run: () => measureEndpointSliceFanout(),
};

export default scenario;
