import { defineConfig } from 'vitest/config';

/**
 * Three projects (the third, `dataplane`, runs real iptables/ipset in network namespaces as
 * root; see e2e/dataplane). Originally two projects: `unit` (hermetic, fast, everything under src/ and bench/) and
 * `integration` (needs a real kube-apiserver + etcd; started once per run by the
 * global setup in e2e/integration, see e2e/controlplane). `npm test` runs both.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts', 'e2e/**/*.unit.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['e2e/integration/**/*.int.test.ts'],
          environment: 'node',
          // Builds kube-apiserver/kubectl if missing (10–20 min cold; vitest sets no deadline on
          // globalSetup), then starts ONE etcd + kube-apiserver for the run.
          globalSetup: ['e2e/integration/global-setup.ts'],
          // One shared API server: files run one after another, never concurrently.
          fileParallelism: false,
          // Real processes and restarts: generous, but a hang still ends the run.
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'dataplane',
          // Real iptables/ipset in network namespaces: needs root, iptables, ipset, iproute2.
          include: ['e2e/dataplane/**/*.netns.test.ts'],
          environment: 'node',
          // Files share the host's xtables lock and netns directory: one at a time.
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'agent',
          // `tessera agent` reliability on a real control plane it starts itself (e2e/runner's
          // cluster): kube-apiserver + etcd, controllers and agents as processes, network
          // namespaces and real probes. Needs root, the control-plane binaries, iptables, ipset.
          include: ['e2e/agent/**/*.agent.test.ts'],
          environment: 'node',
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'felix',
          // Felix itself as the oracle (e2e/felix): calico-felix (built by e2e/felix/build.sh
          // from the Go module proxy, in globalSetup) and Tessera's engine on identical network
          // namespace clusters, a real control plane per file. Needs root, the control-plane
          // binaries, iptables, ipset, ping, conntrack.
          include: ['e2e/felix/**/*.felix.test.ts'],
          environment: 'node',
          globalSetup: ['e2e/felix/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'containers',
          // The images (make image) run as podman containers through testcontainers: the
          // control plane, `tessera controllers` with the manifests' RBAC, `tessera agent` with
          // the manifests' capabilities in a node network namespace. Needs root, podman, runc,
          // debootstrap; globalSetup builds the images (warm: seconds) and serves podman's
          // Docker API (e2e/containers).
          include: ['e2e/containers/**/*.container.test.ts'],
          environment: 'node',
          globalSetup: ['e2e/containers/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
      {
        test: {
          // Tessera installed on a kind cluster with real kubelets (e2e/kind): lifecycle tests
          // (rolling update, agent restart, uninstall). Not in `npm test` (its filter '!kind'):
          // it needs the kind build (~10 min cold) and a 3-node cluster; `npm run test:kind`,
          // CI runs it after the scenario runs on the same cluster. globalSetup builds, brings
          // up and installs what is missing.
          name: 'kind',
          include: ['e2e/kind/**/*.kind.test.ts'],
          environment: 'node',
          globalSetup: ['e2e/kind/global-setup.ts'],
          fileParallelism: false,
          testTimeout: 900_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
