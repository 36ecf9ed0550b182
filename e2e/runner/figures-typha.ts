/**
 * The API server's watches with N agents watching it directly vs N agents through two Typhas
 * (`npm run figures:typha`; N from TESSERA_FIGURES_NODES, default "2,20"). Run it with
 * TESSERA_E2E_COMPILED=1 (after `npm run build`) so 20 agents fit comfortably in memory.
 *
 * For each N and mode: a fresh control plane with manifests/ and the controllers, N nodes (network
 * namespaces, no pods), N agents (each until its first in-sync apply), then kube-apiserver's own
 * `/metrics`: `apiserver_longrunning_requests{verb="WATCH"}` summed, in all and for the
 * `projectcalico.org` group (the kinds the agents watch). Prints one line per run and, last,
 * the JSON of all of them.
 */
import { execFileSync } from 'node:child_process';

import { locateBinaries } from '../controlplane/index.ts';
import { E2eCluster } from './cluster.ts';

const NS = (process.env['TESSERA_FIGURES_NODES'] ?? '2,20').split(',').map(Number);
if (NS.some((n) => !Number.isInteger(n) || n < 1 || n > 40)) throw new RangeError(`TESSERA_FIGURES_NODES must be a list of integers in 1..40, got ${process.env['TESSERA_FIGURES_NODES']}`);

/** Sums the samples of `apiserver_longrunning_requests` with verb WATCH (and `group` when given). */
function watches(metrics: string, group?: string): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_longrunning_requests{') || !line.includes('verb="WATCH"')) continue;
    if (group !== undefined && !line.includes(`group="${group}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function measure(nodes: number, typhas: number): Promise<{ nodes: number; typhas: number; watches: number; calicoWatches: number }> {
  const cluster = await E2eCluster.start({ typhas, log: (l) => process.stderr.write(`${l}\n`) });
  try {
    const names = Array.from({ length: nodes }, (_, k) => `node-${k + 1}`);
    cluster.network.addNodes(names);
    for (const node of names) await cluster.startAgent(node);
    // Let every informer's initial list turn into its watch.
    await new Promise((r) => setTimeout(r, 3_000));
    const metrics = execFileSync(locateBinaries().kubectl, ['--kubeconfig', cluster.adminKubeconfigPath, 'get', '--raw', '/metrics'], { encoding: 'utf8', maxBuffer: 256 << 20 });
    return { nodes, typhas, watches: watches(metrics), calicoWatches: watches(metrics, 'projectcalico.org') };
  } finally {
    await cluster.close();
  }
}

async function main(): Promise<void> {
  const out = [];
  for (const n of NS) {
    for (const typhas of [0, 2]) {
      const r = await measure(n, typhas);
      console.log(`${n} agents ${typhas === 0 ? 'watching the API server' : `through ${typhas} Typhas`}: ${r.watches} watches held by kube-apiserver, ${r.calicoWatches} on projectcalico.org kinds`);
      out.push(r);
    }
  }
  console.log(JSON.stringify(out));
}

await main();
