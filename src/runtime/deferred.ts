/**
 * `Deferred<T>`: a promise together with the functions that settle it, for a result that one
 * event handler produces and another piece of code awaits (a peer's hello, an ack, "closed").
 * It is `Promise.withResolvers()`, which Node 20 lacks (it arrived in Node 22).
 *
 * - It settles once: after the first `resolve` or `reject`, further calls change nothing
 *   (plain promise semantics), so every path that may end the wait can call them freely.
 * - A rejection is never an unhandled rejection: the side that settles it (a connection
 *   closing, say) cannot know whether anyone is still waiting, and Node would otherwise
 *   treat an unawaited rejection as fatal. Whoever awaits `promise` still sees the rejection.
 */
export class Deferred<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (reason: unknown) => void;

  constructor() {
    let resolve!: (value: T) => void;
    let reject!: (reason: unknown) => void;
    this.promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.resolve = resolve;
    this.reject = reject;
    this.promise.catch(() => undefined);
  }
}
