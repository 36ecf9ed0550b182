import { describe, expect, it } from 'vitest';

import { compactHeap } from './compact-heap.ts';

describe('compactHeap', () => {
  it('runs a full collection without node flags, and again on later calls', () => {
    expect(compactHeap()).toBe(true);
    expect(compactHeap()).toBe(true);
  });
});
