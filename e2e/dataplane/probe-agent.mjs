/* global setTimeout, clearTimeout, setInterval */
// Runs inside a pod's network namespace: `ip netns exec <pod> node probe-agent.mjs '<ports json>'`
// where ports is [{"port":80,"protocol":"TCP"|"UDP"}]. Serves every TCP port (answers "ok")
// and UDP port (echoes) on IPv4, and also on IPv6 when a second argument '{"ipv6":true}' is
// given (separate IPv6-only sockets, so the IPv4 ones behave exactly as without it), and runs
// probes to IPv4 or IPv6 hosts on request:
// stdin lines {"id","protocol":"TCP"|"UDP","host","port","timeoutMs"[,"source"]} → stdout {"id","ok"};
// with "source" the probe's socket is bound to that local address first (a node probes from its
// scenario address, not whichever one the kernel would pick).
// With '{"bind":["<address>",…]}' in the second argument it serves on exactly those addresses
// instead of the wildcard ones: a node, whose host network holds other addresses too, so a UDP
// echo leaves from the address the request was sent to (a wildcard socket would answer from
// whichever address the route prefers, a different flow to conntrack and to policy).
// It exits when stdin ends — except with '{"serve":true}' in the second argument: then it only
// serves, and exits on SIGTERM or SIGINT. That is a real pod's main process (the probe-server
// image, images/probe.Containerfile), where PID 1 would otherwise ignore SIGTERM; the e2e
// runner probes from the pod through `kubectl exec -i <pod> -- node probe-agent.mjs '[]'`.
import net, { isIPv6 } from 'node:net';
import dgram from 'node:dgram';
import readline from 'node:readline';

const ports = JSON.parse(process.argv[2] ?? '[]');
const { ipv6 = false, serve = false, bind } = JSON.parse(process.argv[3] ?? '{}');
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

function probeTcp({ host, port, timeoutMs, source }) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, ...(source === undefined ? {} : { localAddress: source }) });
    let data = '';
    const done = (ok) => {
      clearTimeout(t);
      s.destroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.on('data', (d) => {
      data += d;
      if (data.includes('ok')) done(true);
    });
    s.on('error', () => done(false));
  });
}

function probeUdp({ host, port, timeoutMs, source }) {
  return new Promise((resolve) => {
    const s = dgram.createSocket(isIPv6(host) ? 'udp6' : 'udp4');
    const token = Math.random().toString(36).slice(2);
    const done = (ok) => {
      clearTimeout(t);
      s.close();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.on('message', (m) => m.toString() === token && done(true));
    s.on('error', () => done(false));
    if (source === undefined) s.send(token, port, host);
    else s.bind({ address: source, port: 0 }, () => s.send(token, port, host));
  });
}

const binds = bind ?? (ipv6 ? ['0.0.0.0', '::'] : ['0.0.0.0']);
let pending = ports.length * binds.length;
// `source: true` announces that probes honour "source" (a runner refuses an older agent that
// would silently probe from the kernel's choice of address).
const started = () => --pending === 0 && out({ ready: true, source: true });
if (pending === 0) out({ ready: true, source: true });
for (const { port, protocol } of ports) {
  for (const address of binds) {
    const v6 = isIPv6(address);
    if (protocol === 'UDP') {
      const udp = dgram.createSocket({ type: v6 ? 'udp6' : 'udp4', ipv6Only: v6 });
      udp.on('message', (msg, rinfo) => udp.send(msg, rinfo.port, rinfo.address));
      udp.bind(port, address, started);
    } else {
      const tcp = net.createServer((s) => {
        s.on('error', () => {});
        s.end('ok');
      });
      tcp.listen({ port, host: address, ipv6Only: v6 }, started);
    }
  }
}

if (serve) {
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
  // A pod that serves no port must still run until it is stopped.
  setInterval(() => undefined, 2 ** 30);
} else {
  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    const req = JSON.parse(line);
    const ok = req.protocol === 'UDP' ? await probeUdp(req) : await probeTcp(req);
    out({ id: req.id, ok });
  });
  process.stdin.on('end', () => process.exit(0));
}
