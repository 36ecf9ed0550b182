// Runs inside a node's network namespace (`ip netns exec <ns> node tcp-to-unix.mjs <port> <socket>`):
// listens on 127.0.0.1:<port> there and joins every connection to the unix socket <socket>, which
// a process outside serves (api-bridge.ts). Unix sockets are named in the filesystem, not in a
// network namespace, so this is how a namespace reaches the host's loopback API server with no
// address of the host's involved. Prints "ready" once listening.
import net from 'node:net';

const [port, socket] = process.argv.slice(2);
const server = net.createServer((inside) => {
  const outside = net.connect(socket);
  inside.pipe(outside).pipe(inside);
  const close = () => {
    inside.destroy();
    outside.destroy();
  };
  inside.on('error', close);
  outside.on('error', close);
  inside.on('close', close);
  outside.on('close', close);
});
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
