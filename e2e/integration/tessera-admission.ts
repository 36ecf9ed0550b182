/**
 * Removing manifests/' admission policies from the shared API server between test files.
 *
 * The policies are cluster-wide and the files share one API server, so a file that applies
 * them removes them at the end. Deleting the objects is not enough: kube-apiserver's admission
 * plugin learns of the deletion through its own informer, a moment later, and a file that
 * starts in that moment (applying a WorkloadEndpoint as the admin) is still refused — CI saw
 * exactly that. {@link removeTesseraAdmission} waits until a server-side dry run of each
 * write the policies guard is admitted again.
 */
import { pollUntil } from '../controlplane/poll-until.ts';

import { kubectl } from './kubectl.ts';

/** Dry-run writes each Tessera admission policy refuses to an admin (namespace `default`). */
const GUARDED_WRITES: readonly string[] = [
  JSON.stringify({
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name: 'tessera-admission-probe', namespace: 'default' },
    spec: { node: 'n', orchestrator: 'k8s', workload: 'w', pod: 'p', endpoint: 'eth0', ipNetworks: ['10.255.255.1/32'] },
  }),
  JSON.stringify({
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name: 'knp.default.tessera-admission-probe', namespace: 'default' },
    spec: { selector: 'all()', types: ['Ingress'] },
  }),
  JSON.stringify({
    apiVersion: 'projectcalico.org/v3',
    kind: 'GlobalNetworkSet',
    metadata: { name: 'tessera-admission-probe', labels: { 'projectcalico.org/namespace': 'default' } },
    spec: { nets: ['192.0.2.0/24'] },
  }),
];

/**
 * Deletes every admission policy and binding labelled `app.kubernetes.io/part-of=tessera`
 * (and the named ones, for files that applied a single manifest), then waits until the API
 * server admits the writes they guarded.
 */
export async function removeTesseraAdmission(): Promise<void> {
  await kubectl([
    'delete',
    '--ignore-not-found',
    'validatingadmissionpolicybinding,validatingadmissionpolicy',
    '-l',
    'app.kubernetes.io/part-of=tessera',
  ]);
  for (const manifest of GUARDED_WRITES) {
    await pollUntil(
      async () => {
        const r = await kubectl(['create', '--dry-run=server', '-o', 'name', '-f', '-'], { stdin: manifest });
        if (r.code === 0) return true;
        throw new Error(r.stderr.trim());
      },
      { description: 'admission to stop refusing after its policies were deleted', timeoutMs: 30_000, intervalMs: 200 },
    );
  }
}
