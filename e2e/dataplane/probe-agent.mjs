/* global setTimeout, clearTimeout */
// Runs inside a pod's network namespace: `ip netns exec <pod> node probe-agent.mjs '<ports json>'`
// where ports is [{"port":80,"protocol":"TCP"|"UDP"}]. Serves every TCP port (answers "ok")
// and UDP port (echoes), and runs probes on request:
// stdin lines {"id","protocol":"TCP"|"UDP","host","port","timeoutMs"} → stdout {"id","ok"}.
import net from 'node:net';
import dgram from 'node:dgram';
import readline from 'node:readline';

const ports = JSON.parse(process.argv[2] ?? '[]');
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

function probeTcp({ host, port, timeoutMs }) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
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

function probeUdp({ host, port, timeoutMs }) {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    const token = Math.random().toString(36).slice(2);
    const done = (ok) => {
      clearTimeout(t);
      s.close();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.on('message', (m) => m.toString() === token && done(true));
    s.on('error', () => done(false));
    s.send(token, port, host);
  });
}

let pending = ports.length;
const started = () => --pending === 0 && out({ ready: true });
if (pending === 0) out({ ready: true });
for (const { port, protocol } of ports) {
  if (protocol === 'UDP') {
    const udp = dgram.createSocket('udp4');
    udp.on('message', (msg, rinfo) => udp.send(msg, rinfo.port, rinfo.address));
    udp.bind(port, '0.0.0.0', started);
  } else {
    const tcp = net.createServer((s) => {
      s.on('error', () => {});
      s.end('ok');
    });
    tcp.listen(port, '0.0.0.0', started);
  }
}

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const req = JSON.parse(line);
  const ok = req.protocol === 'UDP' ? await probeUdp(req) : await probeTcp(req);
  out({ id: req.id, ok });
});
process.stdin.on('end', () => process.exit(0));
