/**
 * `tessera demo` (`npm run demo`): the example shop in examples/ (Namespaces, Pods,
 * ServiceAccounts and Kubernetes NetworkPolicies in examples/k8s/, a security tier and
 * Calico policies beside them) run through the node agent's own engine, with no cluster:
 * the pod × pod matrix for the shop's three service ports, then the explanation of one
 * denied flow (the storefront talking straight to the database). Deterministic; golden-tested.
 */
import { fileURLToPath } from 'node:url';
import { IpSetNames, loadFromFiles, Simulation, translateCluster } from '../simulate/index.ts';
import { explainOne } from './explain.ts';
import { formatMatrix, processOutput, type CliOutput } from './simulate.ts';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

/** The shop's service ports: the storefront, the api, the database. */
const PORTS: ReadonlyArray<readonly [number, string]> = [
  [8080, 'frontend http'],
  [8081, 'api http-api'],
  [5432, 'db postgres'],
];

export async function runDemo(_argv: readonly string[] = [], out: CliOutput = processOutput): Promise<number> {
  const notes: string[] = [];
  const translated = translateCluster(await loadFromFiles([EXAMPLES], notes));
  for (const n of [...notes, ...translated.notes]) out.stderr(`note: ${n}\n`);
  const sim = new Simulation(translated.resources);
  out.stdout(
    'The example shop (examples/), decided by the node agent\'s engine with no cluster:\n' +
      'controllers\' builders → one calc graph per node → the dataplane\'s rule semantics.\n' +
      '(tessera simulate -f examples --port <n>)\n\n',
  );
  for (const [port, what] of PORTS) {
    out.stdout(`── ${what} ──\n${formatMatrix(sim, sim.matrix('TCP', port), 'TCP', port)}\n`);
  }
  out.stdout('Why can the storefront not reach the database? (tessera explain -f examples --from shop/frontend --to data/db --port 5432)\n\n');
  return explainOne(sim, new IpSetNames(translated.resources.values()), 'shop/frontend', 'data/db', 'TCP', 5432, 'text', out);
}
