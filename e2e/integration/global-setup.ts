/**
 * vitest globalSetup of the `integration` project: builds kube-apiserver/kubectl if missing
 * (a cold build takes 10–20 minutes; vitest puts no deadline on globalSetup), starts ONE
 * control plane for the whole run and hands its coordinates to the test files through
 * `provide`/`inject` (see control-plane-context.ts). Teardown stops it; Ctrl-C and crashes are
 * covered by ControlPlane's exit handlers.
 *
 * A failed build or start does not throw here — that would abort the whole run, unit tests
 * included, with a bare stack. Instead the error is provided to the tests, and every
 * integration test fails with it (never a silent skip).
 */
import type { TestProject } from 'vitest/node';

import { ensureBinaries, kubernetesVersion } from '../controlplane/binaries.ts';
import { ControlPlane } from '../controlplane/control-plane.ts';
import type { ProvidedControlPlane } from './provided-control-plane.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let controlPlane: ControlPlane | undefined;
  let provided: ProvidedControlPlane;
  try {
    const binaries = await ensureBinaries({
      onBuildOutput: (line) => {
        if (!line.startsWith('go: downloading')) process.stderr.write(`[controlplane build] ${line}\n`);
      },
    });
    controlPlane = new ControlPlane({ binaries });
    const { server, token, kubeconfigPath, caPem } = await controlPlane.start();
    provided = {
      ok: true,
      server,
      token,
      caPem: caPem ?? null,
      kubeconfigPath,
      binaries,
      kubernetesVersion: kubernetesVersion(),
    };
    process.stderr.write(
      `[controlplane] kube-apiserver ${kubernetesVersion()} at ${server}, ready in ` +
        `${Math.round(controlPlane.timings?.totalMs ?? 0)} ms (logs: ${controlPlane.tempDir}/logs)\n`,
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`[controlplane] could not provide a control plane:\n${message}\n`);
    provided = { ok: false, error: message };
  }
  project.provide('tesseraControlPlane', provided);
  return async () => {
    await controlPlane?.stop();
  };
}
