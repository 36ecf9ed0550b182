import { describe, expect, it } from 'vitest';
import { Simulation, translateCluster } from '../../src/simulate/index.ts';
import { generateCluster } from './simulate.ts';

describe('bench simulate: generated cluster', () => {
  it('has the asked-for pods, namespaces and policies, and every policy converts cleanly', () => {
    const objs = generateCluster(1000, 100, 500, 20);
    expect(objs.pods).toHaveLength(1000);
    expect(objs.namespaces).toHaveLength(100);
    expect(objs.networkPolicies.length + objs.calico.filter((r) => r.kind !== 'Tier').length).toBe(500);
    expect(translateCluster(objs).notes).toEqual([]);
  });

  it('a small one gives a matrix with both verdicts', () => {
    const sim = new Simulation(translateCluster(generateCluster(60, 6, 30, 3)).resources);
    const cells = sim.matrix('TCP', 8080).flat();
    expect(sim.endpoints).toHaveLength(60);
    expect(cells.some(Boolean)).toBe(true);
    expect(cells.filter((c) => !c).length).toBeGreaterThan(60);
  });
});
