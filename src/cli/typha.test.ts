import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { createRootLogger } from '../runtime/logger.ts';
import { SyncClient } from '../typha/sync-client.ts';
import { waitFor } from '../../test/typha/wire-harness.ts';
import { parseTyphaArgs, runTypha } from './typha.ts';

const TLS = ['--server-cert', 'tls.crt', '--server-key', 'tls.key', '--ca', 'ca.crt'];

describe('tessera typha arguments', () => {
  it("defaults to Typha's port 5473, metrics on 9093, 10,000 connections, no TLS, no rebalancing", () => {
    expect(parseTyphaArgs([], {})).toEqual({
      port: 5473,
      host: '0.0.0.0',
      metricsPort: 9093,
      metricsHost: '0.0.0.0',
      kubeconfig: undefined,
      maxConns: 10_000,
      rebalanceService: undefined,
      shutdownTimeoutSeconds: 300,
      tls: undefined,
    });
    expect(parseTyphaArgs([], { KUBECONFIG: '/k' })).toMatchObject({ kubeconfig: '/k' });
    expect(parseTyphaArgs(['--help'], {})).toBe('help');
  });

  it('takes ports, hosts, the connection limit, the rebalancing Service and the shutdown timeout', () => {
    expect(
      parseTyphaArgs(['--port=0', '--host', '127.0.0.1', '--metrics-port', '0', '--metrics-host=::1', '--max-conns', '50', '--rebalance-service', 'tessera-system/tessera-typha', '--shutdown-timeout', '10', '--kubeconfig', 'kc'], {}),
    ).toMatchObject({
      port: 0,
      host: '127.0.0.1',
      metricsPort: 0,
      metricsHost: '::1',
      maxConns: 50,
      rebalanceService: { namespace: 'tessera-system', name: 'tessera-typha' },
      shutdownTimeoutSeconds: 10,
      kubeconfig: 'kc',
    });
  });

  it('refuses unknown options, bad numbers and a Service that is not <namespace>/<name>', () => {
    expect(() => parseTyphaArgs(['--bogus'], {})).toThrow(/unknown option "--bogus"/);
    expect(() => parseTyphaArgs(['--port', '70000'], {})).toThrow(/--port must be an integer 0–65535/);
    expect(() => parseTyphaArgs(['--max-conns', '0'], {})).toThrow(/--max-conns must be an integer ≥ 1/);
    expect(() => parseTyphaArgs(['--shutdown-timeout', '301'], {})).toThrow(/--shutdown-timeout must be an integer 0–300/);
    expect(() => parseTyphaArgs(['--rebalance-service', 'tessera-typha'], {})).toThrow(/--rebalance-service must be <namespace>\/<service>, not "tessera-typha"/);
    expect(() => parseTyphaArgs(['--rebalance-service', 'a/b/c'], {})).toThrow(/--rebalance-service/);
  });

  it('TLS is all or nothing: cert, key and CA together, with a client CN and/or URI SAN (typha.md §2.1)', () => {
    expect(parseTyphaArgs([...TLS, '--client-cn', 'tessera-agent'], {})).toMatchObject({
      tls: { certFile: 'tls.crt', keyFile: 'tls.key', caFile: 'ca.crt', clientCN: 'tessera-agent', clientURISAN: undefined },
    });
    expect(parseTyphaArgs([...TLS, '--client-uri-san', 'spiffe://cluster.local/ns/tessera-system/sa/tessera-agent'], {})).toMatchObject({
      tls: { clientCN: undefined, clientURISAN: 'spiffe://cluster.local/ns/tessera-system/sa/tessera-agent' },
    });
    expect(parseTyphaArgs([...TLS, '--client-cn', 'a', '--client-uri-san', 'spiffe://x'], {})).toMatchObject({ tls: { clientCN: 'a', clientURISAN: 'spiffe://x' } });
    expect(() => parseTyphaArgs(['--server-cert', 'tls.crt', '--client-cn', 'a'], {})).toThrow(/TLS needs --server-cert, --server-key and --ca together: --server-key, --ca missing/);
    expect(() => parseTyphaArgs(['--client-cn', 'a'], {})).toThrow(/--server-cert, --server-key, --ca missing/);
    expect(() => parseTyphaArgs(TLS, {})).toThrow(/TLS needs --client-cn or --client-uri-san/);
    expect(() => parseTyphaArgs([...TLS, '--client-cn', ''], {})).toThrow(/TLS needs --client-cn or --client-uri-san/);
  });
});

/**
 * The whole command against a stand-in API server (node:http: each v3 list, and the
 * EndpointSlice and Node lists every API server serves, answers with the given items, each
 * watch stays open and quiet), with a real SyncClient as the agent.
 */
describe('tessera typha (the whole command)', () => {
  const OBJECTS: Record<string, object[]> = {
    networkpolicies: [{ metadata: { name: 'allow-web', namespace: 'shop', resourceVersion: '5' }, spec: { tier: 'default', selector: "app == 'web'", types: ['Ingress'] } }],
    workloadendpoints: [{ metadata: { name: 'n1-k8s-web-eth0', namespace: 'shop', resourceVersion: '6', labels: { app: 'web' } }, spec: { node: 'n1', orchestrator: 'k8s', pod: 'web', endpoint: 'eth0', ipNetworks: ['10.0.0.1/32'] } }],
    endpointslices: [{ metadata: { name: 'web-abc', namespace: 'shop', resourceVersion: '7', labels: { 'kubernetes.io/service-name': 'web' } }, addressType: 'IPv4', endpoints: [{ addresses: ['10.0.0.1'] }], ports: [{ port: 80 }] }],
  };

  async function fakeApiServer(): Promise<{ url: string; close(): Promise<void> }> {
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      // Nodes too (core v1: a ClusterNetworkPolicy's egress `nodes` peer); ClusterNetworkPolicies are optional (404: none).
      const m = /^\/(?:apis\/(?:projectcalico\.org\/v3|discovery\.k8s\.io\/v1)|api\/v1)\/([a-z]+)$/.exec(url.pathname);
      if (m === null) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (url.searchParams.get('watch') === 'true') {
        res.flushHeaders();
        return;
      }
      res.end(JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind: 'List', metadata: { resourceVersion: '10' }, items: OBJECTS[m[1] as string] ?? [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  }

  it('serves the informers\' objects to an agent, reports ready, live and its metrics, and exits 0 when stopped', { timeout: 30_000 }, async () => {
    const api = await fakeApiServer();
    const dir = mkdtempSync(join(tmpdir(), 'tessera-typha-cli-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: fake, cluster: {server: '${api.url}', insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: fake, user: u}}]\ncurrent-context: c\n`,
    );
    const lines: Array<{ msg?: string; port?: number }> = [];
    const logger = createRootLogger({ level: 'info', destination: { write: (line: string) => void lines.push(JSON.parse(line) as { msg?: string; port?: number }) } });
    const stop = new AbortController();
    const clientStop = new AbortController();
    try {
      const running = runTypha(['--kubeconfig', kubeconfig, '--host', '127.0.0.1', '--port', '0', '--metrics-host', '127.0.0.1', '--metrics-port', '0'], { logger, stop: stop.signal });
      const portOf = (msg: string): number | undefined => lines.find((l) => l.msg === msg)?.port;
      await waitFor(() => portOf('Typha serving agents') !== undefined && portOf('serving /metrics, /livez, /readyz') !== undefined, 'typha to listen');
      const port = portOf('Typha serving agents') as number;
      const health = `http://127.0.0.1:${portOf('serving /metrics, /livez, /readyz') as number}`;

      const keys = new Map<string, string | undefined>();
      let status = '';
      const client = new SyncClient(
        { addresses: () => [`127.0.0.1:${port}`], hostname: 'n1' },
        {
          onUpdates: (updates) => {
            for (const u of updates) {
              if (u.op === 'delete') keys.delete(`${u.kind}/${u.namespace ?? ''}/${u.name}`);
              else keys.set(`${u.resource.kind}/${u.resource.metadata.namespace ?? ''}/${u.resource.metadata.name}`, u.resource.metadata.resourceVersion);
            }
          },
          onStatusUpdated: (s) => void (status = s),
        },
      );
      const clientDone = client.run(clientStop.signal);
      await waitFor(() => status === 'in-sync' && keys.size === 3, 'the agent to be in sync');
      expect([...keys].sort()).toEqual([
        ['EndpointSlice/shop/web-abc', '7'],
        ['NetworkPolicy/shop/allow-web', '5'],
        ['WorkloadEndpoint/shop/n1-k8s-web-eth0', '6'],
      ]);

      const get = async (path: string): Promise<{ status: number; body: string }> => {
        const res = await fetch(`${health}${path}`);
        return { status: res.status, body: await res.text() };
      };
      expect(await get('/readyz')).toEqual({ status: 200, body: 'ok' });
      expect(await get('/livez')).toEqual({ status: 200, body: 'ok' });
      const metrics = (await get('/metrics')).body;
      expect(metrics).toMatch(/^tessera_typha_cache_size 3$/m);
      expect(metrics).toMatch(/^tessera_typha_updates_total 3$/m);

      stop.abort();
      expect(await running).toBe(0);
      expect(lines.map((l) => l.msg)).toContain('shutting down: closing agent connections');
      clientStop.abort();
      await clientDone;
    } finally {
      stop.abort();
      clientStop.abort();
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
