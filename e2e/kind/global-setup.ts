/**
 * vitest globalSetup of the `kind` project: makes sure there is a kind cluster with Tessera
 * installed, the way a user gets one — the images (`make kind-images`, the Tessera and probe
 * images; warm: seconds), the cluster (`make kind-up`; an existing one is reused) and, when no
 * agent DaemonSet is there, the install (e2e/kind/deploy.sh: `kind load`, then exactly
 * `kubectl apply -f manifests/`). The cluster stays up afterwards (`make kind-down` removes it):
 * CI removes it itself, and a developer's next run reuses it.
 *
 * A failed step throws: every kind test would otherwise fail with the same cause.
 */
import { kubectl, script } from './kind-tools.ts';

const log = (line: string): void => void process.stderr.write(`[kind] ${line}\n`);

export default async function setup(): Promise<void> {
  const t0 = Date.now();
  await script('e2e/kind/build-images.sh', [], log);
  await script('images/build.sh', ['probe'], log);
  await script('e2e/kind/up.sh', [], log);
  const installed = await kubectl(['-n', 'tessera-system', 'get', 'daemonset', 'tessera-agent', '--ignore-not-found', '-o', 'name']).catch(() => '');
  if (installed.trim() === '') await script('e2e/kind/deploy.sh', [], log);
  log(`cluster with Tessera ready in ${Math.round((Date.now() - t0) / 1000)} s`);
}
