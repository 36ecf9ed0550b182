import type { ControlPlaneBinaries } from '../controlplane/binaries.ts';

/**
 * What global-setup.ts hands to the test files (it crosses a process boundary, so plain JSON):
 * either the shared control plane's coordinates or the reason there is none.
 */
export type ProvidedControlPlane =
  | {
      readonly ok: true;
      readonly server: string;
      readonly token: string;
      /** PEM verifying the serving cert; null means skip TLS verification. */
      readonly caPem: string | null;
      /** Admin kubeconfig, for kubectl. */
      readonly kubeconfigPath: string;
      readonly binaries: ControlPlaneBinaries;
      readonly kubernetesVersion: string;
    }
  | { readonly ok: false; readonly error: string };

declare module 'vitest' {
  export interface ProvidedContext {
    tesseraControlPlane: ProvidedControlPlane;
  }
}
