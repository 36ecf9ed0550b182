/* global setTimeout, clearTimeout */
// One end of a long-lived TCP connection between pod namespaces, for tests that need a
// connection to outlive a change (the runner's probes are one-shot). Runs inside a pod's
// network namespace (`ip netns exec <pod> node echo-peer.mjs …`) and talks JSON lines:
//
//   serve <port>               echoes every byte it receives on every connection;
//                              stdout {"ready":true} once listening, {"accepted":n} per connection
//   connect <host> <port> <ms> opens ONE connection (never reconnects); stdout {"connected":true}
//                              or {"closed":"<why>"} when it fails within <ms> or ends later.
//                              stdin {"id","timeoutMs"} sends "<id>\n" on it; stdout {"id","ok"}:
//                              ok when "<id>\n" came back within timeoutMs
import net from 'node:net';
import readline from 'node:readline';

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const [mode, ...args] = process.argv.slice(2);

if (mode === 'serve') {
  let accepted = 0;
  const server = net.createServer((s) => {
    out({ accepted: ++accepted });
    s.on('error', () => {});
    s.pipe(s);
  });
  server.listen({ port: Number(args[0]), host: '0.0.0.0' }, () => out({ ready: true }));
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else if (mode === 'connect') {
  const [host, port, connectMs] = args;
  const waiting = new Map();
  let received = '';
  let closed;
  const end = (why) => {
    if (closed !== undefined) return;
    closed = why;
    out({ closed: why });
    for (const done of waiting.values()) done(false);
    waiting.clear();
  };
  const socket = net.connect({ host, port: Number(port) });
  const connectTimer = setTimeout(() => {
    end(`not connected within ${connectMs} ms`);
    socket.destroy();
  }, Number(connectMs));
  socket.on('connect', () => {
    clearTimeout(connectTimer);
    out({ connected: true });
  });
  socket.on('data', (chunk) => {
    received += chunk;
    let nl;
    while ((nl = received.indexOf('\n')) >= 0) {
      const id = received.slice(0, nl);
      received = received.slice(nl + 1);
      waiting.get(id)?.(true);
      waiting.delete(id);
    }
  });
  socket.on('error', (err) => end(err.message));
  socket.on('close', () => end('closed by peer'));
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const { id, timeoutMs } = JSON.parse(line);
    if (closed !== undefined) {
      out({ id, ok: false });
      return;
    }
    const key = String(id);
    const timer = setTimeout(() => {
      waiting.delete(key);
      out({ id, ok: false });
    }, timeoutMs);
    waiting.set(key, (ok) => {
      clearTimeout(timer);
      out({ id, ok });
    });
    socket.write(`${key}\n`);
  });
  process.stdin.on('end', () => {
    socket.destroy();
    process.exit(0);
  });
} else {
  process.stderr.write(`echo-peer: unknown mode ${JSON.stringify(mode)} (serve | connect)\n`);
  process.exit(2);
}
