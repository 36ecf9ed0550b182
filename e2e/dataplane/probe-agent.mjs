/* global setTimeout, clearTimeout */
// Runs inside a pod's network namespace (`ip netns exec <pod> node probe-agent.mjs <tcp> <udp>`).
// Serves a TCP port (answers "ok") and a UDP port (echoes), and runs probes on request:
// stdin lines {"id","kind":"tcp"|"udp","host","port","timeoutMs"} → stdout {"id","ok"}.
import net from 'node:net';
import dgram from 'node:dgram';
import readline from 'node:readline';

const [tcpPort, udpPort] = process.argv.slice(2).map(Number);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const tcp = net.createServer((s) => {
  s.on('error', () => {});
  s.end('ok');
});
const udp = dgram.createSocket('udp4');
udp.on('message', (msg, rinfo) => udp.send(msg, rinfo.port, rinfo.address));

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

let ready = 0;
const isReady = () => ++ready === 2 && out({ ready: true });
tcp.listen(tcpPort, '0.0.0.0', isReady);
udp.bind(udpPort, '0.0.0.0', isReady);

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const req = JSON.parse(line);
  const ok = req.kind === 'tcp' ? await probeTcp(req) : await probeUdp(req);
  out({ id: req.id, ok });
});
process.stdin.on('end', () => process.exit(0));
