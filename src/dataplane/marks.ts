/**
 * Mark bits (dataplane.md §2). Felix allocates single bits from `IptablesMarkMask`
 * (default 0xffff0000) lowest first: accept, pass, then (HEAD) drop, scratch0, scratch1.
 * Tessera has no drop-mark user, so scratch0/scratch1 take the next two bits; the values are
 * fixed here rather than allocated because nothing else in Tessera claims mark bits.
 */
export const MARK_ACCEPT = 0x10000;
export const MARK_PASS = 0x20000;
/** Match blocks: "every block so far matched". */
export const MARK_SCRATCH0 = 0x40000;
/** Match blocks: "this block matched". */
export const MARK_SCRATCH1 = 0x80000;
/** Felix `IptablesMarkMask` default: every bit Calico may use. */
export const MARK_MASK = 0xffff0000;
/** Every bit Tessera uses (Felix `allCalicoMarkBits`): what the static chains clear. */
export const MARK_ALL_CALICO = MARK_ACCEPT | MARK_PASS | MARK_SCRATCH0 | MARK_SCRATCH1;
