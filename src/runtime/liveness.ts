/**
 * Liveness: is every main loop of the process still making progress? What `/livez` answers,
 * so the kubelet restarts a process that is wedged — an apply that never returns, a
 * list/watch loop that died — and leaves alone one that is merely waiting for work.
 *
 * Felix's model (libcalico-go `lib/health`, `HealthAggregator`): each component registers a
 * name and a timeout and reports while it works; the process is live while every component
 * reported within its timeout. Felix's defaults: `InternalDataplaneMainLoop` 90 s
 * (`DataplaneWatchdogTimeout`), `CalculationGraph` 30 s (`felix/calc/async_calc_graph.go`).
 *
 * Here a component does not report on a ticker; it answers one question when asked:
 * *since when have you owed progress?* (`pendingSince`).
 * - `undefined`: idle — nothing to do, or waiting on something outside the process. Healthy
 *   however long it lasts: an agent with no changes to apply is not stuck.
 * - a clock time: the moment the work now in hand began (an apply started, a batch queued, a
 *   list/watch loop last turned). The component is stuck once that is more than its
 *   `timeoutMs` ago.
 *
 * Asking instead of ticking means no timer runs, the answer is exact at the moment of the
 * probe, and a component blocked in an await needs no cooperation to be caught. Every
 * `pendingSince` must be read on the same clock as the `Liveness` (the process's `realClock`,
 * or one `FakeClock` in tests).
 */
import { realClock, type Clock } from './clock.ts';
import { silentLogger, type Logger } from './logger.ts';

/** What a component tells `Liveness`. */
export interface LivenessProbe {
  /** The longest a healthy component may owe progress, in ms. */
  readonly timeoutMs: number;
  /** Clock time (ms) since which the component has owed progress; undefined while idle. */
  pendingSince(): number | undefined;
}

export interface ComponentLiveness {
  readonly name: string;
  readonly live: boolean;
  /** How long the component has owed progress; undefined while idle. */
  readonly pendingMs: number | undefined;
  readonly timeoutMs: number;
}

export interface LivenessReport {
  /** True when no component is stuck. */
  readonly live: boolean;
  /** Every registered component, in registration order. */
  readonly components: readonly ComponentLiveness[];
}

export interface LivenessOptions {
  /** @default realClock */
  readonly clock?: Clock;
  /** Logs each component's transition to stuck and back. @default silentLogger */
  readonly logger?: Logger;
}

export class Liveness {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly probes = new Map<string, LivenessProbe>();
  private readonly stuck = new Set<string>();

  constructor(opts: LivenessOptions = {}) {
    const { clock = realClock, logger = silentLogger } = opts;
    this.clock = clock;
    this.log = logger.child({ component: 'liveness' });
  }

  /** Adds a component; disposing the result removes it (a component that stopped is not stuck). */
  register(name: string, probe: LivenessProbe): Disposable {
    if (name === '') throw new TypeError('Liveness.register: name must not be empty');
    if (!(probe.timeoutMs > 0)) throw new RangeError(`Liveness.register: ${name}: timeoutMs must be > 0, got ${probe.timeoutMs}`);
    if (this.probes.has(name)) throw new TypeError(`Liveness.register: ${name}: a component with this name is already registered`);
    this.probes.set(name, probe);
    return {
      [Symbol.dispose]: () => {
        if (this.probes.get(name) !== probe) return;
        this.probes.delete(name);
        this.stuck.delete(name);
      },
    };
  }

  /** Asks every component now. */
  check(): LivenessReport {
    const now = this.clock.now();
    const components: ComponentLiveness[] = [];
    for (const [name, probe] of this.probes) {
      const since = probe.pendingSince();
      const pendingMs = since === undefined ? undefined : Math.max(0, now - since);
      const live = pendingMs === undefined || pendingMs <= probe.timeoutMs;
      components.push({ name, live, pendingMs, timeoutMs: probe.timeoutMs });
      if (!live && !this.stuck.has(name)) {
        this.stuck.add(name);
        this.log.warn({ stuck: name, pendingMs, timeoutMs: probe.timeoutMs }, 'component made no progress within its liveness timeout');
      } else if (live && this.stuck.delete(name)) {
        this.log.info({ recovered: name }, 'component is making progress again');
      }
    }
    return { live: components.every((c) => c.live), components };
  }
}

/**
 * The `/livez` body for a report: `ok`, or one line per stuck component —
 * `stuck: dataplane: no progress for 75.0 s (timeout 60 s)`.
 */
export function describeLiveness(report: LivenessReport): string {
  if (report.live) return 'ok';
  return report.components
    .filter((c) => !c.live)
    .map((c) => `stuck: ${c.name}: no progress for ${((c.pendingMs ?? 0) / 1000).toFixed(1)} s (timeout ${c.timeoutMs / 1000} s)`)
    .join('\n');
}
