import { afterEach, describe, expect, it } from 'vitest';

import { createRootLogger } from './logger.ts';
import { runDaemon, type DaemonContext } from './daemon.ts';
import { untilAborted } from './until-aborted.ts';

function logs() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createRootLogger({ level: 'info', destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  return { lines, logger };
}


describe('runDaemon', () => {
  const listeners = { term: process.listenerCount('SIGTERM'), int: process.listenerCount('SIGINT') };
  afterEach(() => {
    expect(process.listenerCount('SIGTERM')).toBe(listeners.term);
    expect(process.listenerCount('SIGINT')).toBe(listeners.int);
  });

  it('serves /metrics, /livez, /readyz and the JSON endpoints before run, stops on SIGTERM, and logs exiting last', async () => {
    const { lines, logger } = logs();
    let ctx: DaemonContext | undefined;
    let ready = false;
    const answers: Record<string, number> = {};
    const done = runDaemon(
      { logger, metricsPort: 0, metricsHost: '127.0.0.1', shutdownMessage: 'shutting down' },
      (c) => {
        ctx = c;
        return {
          ready: () => ready,
          live: () => ({ live: false, components: [{ name: 'loop', live: false, pendingMs: 5000, timeoutMs: 1000 }] }),
          json: { '/rules': async () => [{ rule: 1 }] },
          servingFields: { nodeName: 'n1' },
          run: async () => {
            const url = `http://127.0.0.1:${String(lines.find((l) => String(l['msg']).startsWith('serving'))?.['port'])}`;
            for (const path of ['/readyz', '/livez', '/rules', '/metrics']) answers[path] = (await fetch(url + path)).status;
            ready = true;
            answers['/readyz later'] = (await fetch(`${url}/readyz`)).status;
            expect(await (await fetch(`${url}/metrics`)).text()).toMatch(/^process_cpu_user_seconds_total /m);
            process.emit('SIGTERM', 'SIGTERM');
            await untilAborted(c.signal);
            return 'stopped' as const;
          },
        };
      },
      (outcome) => ({ outcome }),
    );
    expect(await done).toBe('stopped');
    expect(ctx?.reason()).toBe('SIGTERM');
    expect(answers).toEqual({ '/readyz': 503, '/livez': 503, '/rules': 200, '/metrics': 200, '/readyz later': 200 });
    expect(lines.map((l) => l['msg'])).toEqual(['serving /metrics, /livez, /readyz, /rules', 'shutting down', 'exiting']);
    expect(lines[0]).toMatchObject({ nodeName: 'n1' });
    expect(lines[1]).toMatchObject({ signal: 'SIGTERM' });
    expect(lines[2]).toMatchObject({ outcome: 'stopped' });
  });

  it("the stop option shuts down as a signal does, without the signal's log line; a stop already aborted stops at once", async () => {
    const { lines, logger } = logs();
    const stop = new AbortController();
    stop.abort();
    const code = await runDaemon(
      { logger, metricsPort: 0, metricsHost: '127.0.0.1', shutdownMessage: 'shutting down', stop: stop.signal },
      (c) => ({ ready: () => true, run: async () => (await untilAborted(c.signal), c.reason() === 'stop' ? 0 : 1) }),
      (exitCode) => ({ exitCode }),
    );
    expect(code).toBe(0);
    expect(lines.map((l) => l['msg'])).toEqual(['serving /metrics, /livez, /readyz', 'exiting']);
    expect(lines[1]).toMatchObject({ exitCode: 0 });
  });
});
