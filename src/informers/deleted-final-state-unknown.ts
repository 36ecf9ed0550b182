/**
 * A tombstone: the object was deleted while the watch was down, so the deletion was only
 * inferred from a relist (`DeltaFIFO.replace`). `obj` is the last state this process knew
 * and may be stale, or undefined when nothing was known. Delete handlers must accept either
 * an object or a tombstone (client-go `DeletedFinalStateUnknown`).
 */
export class DeletedFinalStateUnknown<T> {
  constructor(
    readonly key: string,
    readonly obj: T | undefined,
  ) {}
}
