/**
 * `services` rule matches through the CLI: `render`, `explain` and `simulate` read
 * EndpointSlice (and Service) documents from their input files.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ipSetName, makeUniqueId } from '../selector/index.ts';
import { runExplain } from './explain.ts';
import { runRender } from './render.ts';
import { capture } from './testdata/capture.ts';

const pod = (name: string, app: string, ip: string): string => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: x, labels: {app: ${app}}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {phase: Running, podIP: ${ip}, podIPs: [{ip: ${ip}}]}
`;

const INPUT = [
  'apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n',
  pod('client', 'client', '10.66.1.3'),
  pod('web-1', 'web', '10.66.1.2'),
  pod('web-2', 'web', '10.66.1.4'),
  `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: client-to-web, namespace: x}
spec:
  selector: app == 'client'
  types: [Egress]
  egress: [{action: Allow, destination: {services: {name: web}}}]
`,
  `apiVersion: v1
kind: Service
metadata: {name: web, namespace: x}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
`,
  `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: x, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.66.1.2], conditions: {ready: true}}]
ports: [{name: http, protocol: TCP, port: 8080}]
`,
].join('---\n');

describe('services rule matches through the CLI', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tessera-svc-'));
    writeFileSync(path.join(dir, 'cluster.yaml'), INPUT);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('render: the Service set (hash:ip,port, ip,tcp:port members) and its dst,dst match', async () => {
    const r = await capture(runRender, ['--node', 'node-1', '-f', dir]);
    expect(r.stderr).not.toContain('not a kind the simulator reads');
    expect(r.code).toBe(0);
    const set = ipSetName(makeUniqueId('svc', 'x/web'), 4);
    expect(r.stdout).toContain(`create ${set} hash:ip,port family inet`);
    expect(r.stdout).toContain(`add ${set} 10.66.1.2,tcp:8080`);
    expect(r.stdout).toContain(`-m set --match-set ${set} dst,dst`);
  });

  it('explain: allowed to the member on its port (naming the Service and member), denied on another port and to another pod', async () => {
    const ok = await capture(runExplain, ['-f', dir, '--from', 'x/client', '--to', 'x/web-1', '--port', '8080']);
    expect(ok.stdout).toContain('x/client → x/web-1 TCP/8080: ALLOWED');
    expect(ok.stdout).toContain('matched — destination 10.66.1.2,tcp:8080 is in {Service x/web (endpoint addresses and ports)}');
    const port = await capture(runExplain, ['-f', dir, '--from', 'x/client', '--to', 'x/web-1', '--port', '80']);
    expect(port.stdout).toContain('TCP/80: DENIED');
    const other = await capture(runExplain, ['-f', dir, '--from', 'x/client', '--to', 'x/web-2', '--port', '8080']);
    expect(other.stdout).toContain('TCP/8080: DENIED');
  });
});
