import { request } from 'node:https';

/**
 * GET over TLS without verification: the readiness probes of the control plane's components,
 * which only need the status of a loopback endpoint they serve with a self-signed
 * certificate, and send no credentials.
 */
export function httpsGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', rejectUnauthorized: false, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('request timed out after 2 s')));
    req.on('error', reject);
    req.end();
  });
}
