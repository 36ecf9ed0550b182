/**
 * Typha's side of the fan-out bench's update latency: for every stamped update, when the LAST
 * connection's socket accepted the bytes of the crumb carrying it (SyncServer's
 * `onCrumbsWritten`: written without backpressure, or drained), minus the stamp — "update →
 * written to all N sockets". No reader's speed enters it except through TCP backpressure, which
 * is what a slow node would cost Typha too.
 *
 * Invariants: a crumb is scanned for stamps once (the first connection reporting it); each
 * connection counts each crumb once (the server reports every crumb once per connection, in
 * order); an update counts as written to all only when `connections` connections reported its
 * crumb.
 */
import type { Breadcrumb } from '../src/typha/breadcrumb.ts';
import { STAMP_LABEL } from './typha-agent-protocol.ts';

interface CrumbWrites {
  /** Connections that wrote this crumb so far, and when the last did (epoch ms). */
  written: number;
  lastAt: number;
  /** Stamped updates in the crumb: [id, sent epoch ms] pairs. */
  stamps: Array<[number, number]>;
}

/** The stamps `<id>_<ms>` in a serialized value (JSON of the resource): every `bench-stamp` label. */
export function stampsIn(value: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const needle = `"${STAMP_LABEL}":"`;
  for (let i = value.indexOf(needle); i >= 0; i = value.indexOf(needle, i + needle.length)) {
    const start = i + needle.length;
    const end = value.indexOf('"', start);
    const [id, sent] = value.slice(start, end).split('_');
    if (id !== undefined && sent !== undefined) out.push([Number(id), Number(sent)]);
  }
  return out;
}

export interface WrittenFigures {
  /** Per stamped update: stamp → written to all connections, p50 / p99 / max (ms). */
  writtenToAllP50Ms: number;
  writtenToAllP99Ms: number;
  writtenToAllMaxMs: number;
  /** Stamped updates written to every connection, and (update × connection) writes missing. */
  updatesWrittenToAll: number;
  unwritten: number;
}

export class WrittenLatency {
  readonly #crumbs = new Map<number, CrumbWrites>();
  readonly #now: () => number;

  /** `now`: the machine clock the stamps use (epoch ms). */
  constructor(now: () => number = () => performance.timeOrigin + performance.now()) {
    this.#now = now;
  }

  /** The `onCrumbsWritten` hook: crumbs `from` … `to` were written to one connection. */
  readonly onCrumbsWritten = (_connId: number, from: Breadcrumb, to: Breadcrumb): void => {
    const at = this.#now();
    for (let c: Breadcrumb | undefined = from; c !== undefined; c = c === to ? undefined : c.nextIfPublished) {
      let w = this.#crumbs.get(c.seq);
      if (w === undefined) {
        const stamps: Array<[number, number]> = [];
        for (const d of c.deltas) if (d.value !== null) stamps.push(...stampsIn(d.value));
        w = { written: 0, lastAt: 0, stamps };
        this.#crumbs.set(c.seq, w);
      }
      w.written++;
      w.lastAt = at;
    }
  };

  /** The figures over every stamped update seen, for `connections` connections. */
  figures(connections: number, totalUpdates: number): WrittenFigures {
    const latencies: number[] = [];
    let unwritten = 0;
    let seen = 0;
    for (const w of this.#crumbs.values()) {
      for (const [, sent] of w.stamps) {
        seen++;
        if (w.written >= connections) latencies.push(w.lastAt - sent);
        else unwritten += connections - w.written;
      }
    }
    unwritten += (totalUpdates - seen) * connections;
    latencies.sort((a, b) => a - b);
    const pct = (p: number): number => (latencies.length === 0 ? NaN : Number((latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] as number).toFixed(1)));
    return {
      writtenToAllP50Ms: pct(50),
      writtenToAllP99Ms: pct(99),
      writtenToAllMaxMs: latencies.length === 0 ? NaN : Number((latencies.at(-1) as number).toFixed(1)),
      updatesWrittenToAll: latencies.length,
      unwritten,
    };
  }
}
