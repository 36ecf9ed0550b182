/**
 * `Dispatcher`: fans model updates out by kind (Felix: `dispatcher.Dispatcher`,
 * calico-semantics §5.3).
 *
 * - Handlers for a kind run in registration order.
 * - A handler that returns `true` (filter out) stops later handlers for that update; that
 *   is for filters, not for ordinary peers, which return nothing.
 */
import type { ModelKind, ModelUpdate } from './model.ts';

/** Returns `true` to stop later handlers. */
export type UpdateHandler<K extends ModelKind = ModelKind> = (update: Extract<ModelUpdate, { kind: K }>) => boolean | void;

export class Dispatcher {
  readonly #handlers = new Map<ModelKind, Array<(u: ModelUpdate) => boolean | void>>();

  register<K extends ModelKind>(kind: K, handler: UpdateHandler<K>): void {
    let list = this.#handlers.get(kind);
    if (list === undefined) this.#handlers.set(kind, (list = []));
    list.push(handler as (u: ModelUpdate) => boolean | void);
  }

  dispatch(update: ModelUpdate): void {
    const list = this.#handlers.get(update.kind);
    if (list === undefined) return;
    for (const h of list) if (h(update) === true) return;
  }
}
