/** `tessera simulate --output html`: the self-contained connectivity report (in progress). */
import type { V3Resource } from '../api/index.ts';
import type { ProbeProtocol, Simulation } from '../simulate/index.ts';

export function renderReport(_sim: Simulation, _resources: ReadonlyMap<string, V3Resource>, _protocol: ProbeProtocol, _port: number): string {
  throw new Error('tessera simulate --output html is not implemented yet');
}
