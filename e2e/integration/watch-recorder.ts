import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';

import { PollAbort, pollUntil } from '../controlplane/poll-until.ts';

/** One event of a watch stream. */
export interface RecordedEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: KubernetesObject & Record<string, unknown>;
}

/**
 * Records a client-node `Watch` stream so a test can wait for "the next event like this"
 * with a deadline instead of sleeping.
 *
 * - The event callback only appends (Watch swallows exceptions thrown in it, reference §2.2).
 * - `next()` consumes events in order: each event satisfies at most one `next()`; events
 *   that do not match are skipped (and stay visible in `events`).
 */
export class WatchRecorder implements AsyncDisposable {
  readonly events: RecordedEvent[] = [];
  #cursor = 0;
  #done: { err: unknown } | undefined;
  #controller: AbortController | undefined;

  private constructor() {}

  /** Starts `GET <path>?watch=true&<query>`. */
  static async start(
    kc: KubeConfig,
    path: string,
    query: Record<string, string | number | boolean | undefined>,
  ): Promise<WatchRecorder> {
    const recorder = new WatchRecorder();
    recorder.#controller = await new Watch(kc).watch(
      path,
      query,
      (type, object) => {
        recorder.events.push({ type: type as RecordedEvent['type'], object: object as RecordedEvent['object'] });
      },
      (err) => {
        recorder.#done ??= { err };
      },
    );
    return recorder;
  }

  /** Set once the stream has ended (err null: closed by the server). */
  get done(): { err: unknown } | undefined {
    return this.#done;
  }

  /** Waits for the next event (after the ones already consumed) that satisfies `matches`. */
  async next(
    description: string,
    matches: (event: RecordedEvent) => boolean,
    timeoutMs = 30_000,
  ): Promise<RecordedEvent> {
    return pollUntil(
      () => {
        while (this.#cursor < this.events.length) {
          const event = this.events[this.#cursor++] as RecordedEvent;
          if (matches(event)) return event;
        }
        if (this.#done !== undefined) {
          throw new PollAbort(new Error(`watch ended (${String(this.#done.err)}) before ${description}`));
        }
        return undefined;
      },
      { description: `watch event: ${description}`, timeoutMs, intervalMs: 20 },
    );
  }

  /** Waits until the stream ends and returns how it ended. */
  async ended(timeoutMs = 30_000): Promise<{ err: unknown }> {
    return pollUntil(() => this.#done, { description: 'the watch to end', timeoutMs, intervalMs: 20 });
  }

  stop(): void {
    this.#controller?.abort();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.stop();
  }
}

/** `event` is of `type` for the object named `name`. */
export function isEvent(type: RecordedEvent['type'], name: string): (event: RecordedEvent) => boolean {
  return (event) => event.type === type && event.object.metadata?.name === name;
}
