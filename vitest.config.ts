import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` (hermetic, fast, everything under src/ and bench/) and
 * `integration` (needs a real kube-apiserver + etcd; started once per run by the
 * global setup in e2e/controlplane). `npm test` runs both.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'bench/**/*.test.ts', 'e2e/**/*.unit.test.ts'],
          environment: 'node',
        },
      },
    ],
  },
});
