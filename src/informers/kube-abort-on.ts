/**
 * `abortOn(signal)`: per-call options for a generated client-node API method (a Lease read or
 * write, an EndpointSlice or Node list) that tie its HTTP request to `signal`: aborting it
 * destroys the request wherever it is (connecting, sending, awaiting the answer, reading the
 * body) and the call rejects with an `AbortError`. client-node 1.x sets no request timeout of
 * its own, so this is how a caller bounds a call that never answers.
 *
 * How: client-node 1.x's fetch takes the signal of the RequestContext; this middleware sets
 * it, appended after the API's own middleware so nothing replaces it.
 *
 * It lives beside the kube ListerWatcher source because, like it, it is an adapter to the
 * Kubernetes client (DESIGN.md §2: the kube client stays out of every layer below the
 * controllers but these: .dependency-cruiser.mjs); the controllers' leader election and Typha's rebalancer share it.
 */
import { Observable, type ConfigurationOptions, type ObservableMiddleware } from '@kubernetes/client-node';

export function abortOn(signal: AbortSignal): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}
