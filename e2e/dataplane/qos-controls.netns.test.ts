/**
 * Real TCP through real iptables: a WorkloadEndpoint with `qosControls.ingressMaxConnections: 1`
 * refuses a second concurrent connection (`connlimit` → REJECT with a TCP reset, as Felix
 * renders it) while the first stays up and carries data; without the limit both connect.
 *
 * The server and the client are their own processes in web's and client's namespaces, so the
 * first connection is held open for as long as the test needs (the probe agent closes each
 * connection at once).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource, WorkloadEndpoint } from '../../src/api/index.ts';
import { Harness, workload } from './harness.ts';
import type { Update } from '../../src/syncer/index.ts';

const PORT = 9090;
const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

/** Echoes every line back and never closes a connection itself. */
const SERVER = `
const net = require('node:net');
net.createServer((s) => { s.on('error', () => {}); s.pipe(s); }).listen(${PORT}, '0.0.0.0', () => console.log('ready'));
`;

/**
 * Opens connection A and checks it echoes; opens connection B while A is up; checks A still
 * echoes; prints {"a1","b","a2"}: "echo" or "connected", else the error code.
 */
const CLIENT = (host: string): string => `
const net = require('node:net');
const open = () => new Promise((resolve) => {
  const s = net.connect({ host: '${host}', port: ${PORT} });
  const t = setTimeout(() => { s.destroy(); resolve({ s: undefined, r: 'timeout' }); }, 3000);
  s.on('connect', () => { clearTimeout(t); resolve({ s, r: 'connected' }); });
  s.on('error', (e) => { clearTimeout(t); resolve({ s: undefined, r: e.code }); });
});
const echo = (s, word) => new Promise((resolve) => {
  const t = setTimeout(() => resolve('timeout'), 3000);
  s.once('data', (d) => { clearTimeout(t); resolve(String(d) === word ? 'echo' : 'wrong:' + String(d)); });
  s.once('error', (e) => { clearTimeout(t); resolve(e.code); });
  s.write(word);
});
(async () => {
  const a = await open();
  const a1 = a.s ? await echo(a.s, 'one') : a.r;
  const b = await open();
  const a2 = a.s ? await echo(a.s, 'two') : a.r;
  console.log(JSON.stringify({ a1, b: b.r, a2 }));
  a.s?.destroy(); b.s?.destroy();
})();
`;

function inNetns(netns: string, script: string): ChildProcessWithoutNullStreams {
  return spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
}

function firstLine(child: ChildProcessWithoutNullStreams, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no output`)), 20_000);
    child.on('exit', (code) => reject(new Error(`${what} exited with ${code}`)));
    readline.createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
  });
}

describe('dataplane: qosControls.ingressMaxConnections on real TCP', () => {
  let h: Harness;
  let server: ChildProcessWithoutNullStreams | undefined;
  let web: (qos?: WorkloadEndpoint['spec']['qosControls']) => WorkloadEndpoint;

  beforeAll(async () => {
    h = await Harness.create();
    const pod = h.topo.pod('web');
    web = (qos) => {
      const w = workload('web', pod.ip, pod.iface, { app: 'web' });
      return qos === undefined ? w : { ...w, spec: { ...w.spec, qosControls: qos } };
    };
    server = inNetns(pod.netns, SERVER);
    expect(await firstLine(server, 'server')).toBe('ready');
  });
  afterAll(async () => {
    server?.kill();
    await h?.dispose();
  });

  const connect = async (): Promise<unknown> => JSON.parse(await firstLine(inNetns(h.topo.pod('client').netns, CLIENT(h.topo.pod('web').ip)), 'client'));

  it('maxConnections 1: a second concurrent connection is reset while the first stays up', async () => {
    await h.update(upsert(...h.baseResources().filter((r) => r.metadata.name !== 'web'), web({ ingressMaxConnections: 1 })));
    // As iptables-save prints it: `-p tcp` first, connlimit's default `--connlimit-saddr` spelled out.
    expect(h.saveNode()).toMatch(
      new RegExp(`-A cali-tw-${h.topo.pod('web').iface} -p tcp .*Reject connections over ingress connection limit.* -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connlimit --connlimit-above 1 --connlimit-mask 0 --connlimit-saddr -j REJECT --reject-with tcp-reset`),
    );
    expect(await connect()).toEqual({ a1: 'echo', b: 'ECONNREFUSED', a2: 'echo' });
  });

  it('without the limit both connect', async () => {
    await h.update(upsert(web()));
    expect(h.saveNode()).not.toMatch(/connlimit/);
    expect(await connect()).toEqual({ a1: 'echo', b: 'connected', a2: 'echo' });
  });
});
