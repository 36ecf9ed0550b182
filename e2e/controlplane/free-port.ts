import { createServer } from 'node:net';

/**
 * Asks the kernel for a free TCP port on 127.0.0.1 (bind to port 0, read it, close).
 *
 * There is an unavoidable window between closing and the caller binding the port; on a
 * loopback-only test machine that race is accepted (envtest does the same).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`freePort: unexpected listen address ${String(address)}`));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** Returns `count` distinct free ports (held open together, so they cannot coincide). */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  if (!Number.isInteger(count) || count < 1) {
    throw new RangeError(`freePorts: count must be a positive integer, got ${count}`);
  }
  const servers = await Promise.all(
    Array.from({ length: count }, () => {
      const server = createServer();
      server.unref();
      return new Promise<{ server: typeof server; port: number }>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host, port: 0, exclusive: true }, () => {
          const address = server.address();
          if (address === null || typeof address === 'string') {
            reject(new Error(`freePorts: unexpected listen address ${String(address)}`));
            return;
          }
          resolve({ server, port: address.port });
        });
      });
    }),
  );
  await Promise.all(servers.map(({ server }) => new Promise<void>((r) => server.close(() => r()))));
  return servers.map(({ port }) => port);
}
