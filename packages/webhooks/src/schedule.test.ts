import { describe, expect, it } from '@jest/globals';
import { MAX_DELIVERY_ATTEMPTS, nextRetryDelayMs } from './schedule';

describe('retry schedule', () => {
  it('is about 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 12 h (about a day), then no more', () => {
    const waits = Array.from({ length: MAX_DELIVERY_ATTEMPTS }, (_, i) => nextRetryDelayMs(i + 1));
    expect(waits).toEqual([60_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 43_200_000, null]);
    const total = waits.reduce<number>((sum, w) => sum + (w ?? 0), 0);
    expect(total / 3_600_000).toBeCloseTo(29.6, 1);
  });

  it('scales with its base (tests run it in seconds)', () => {
    expect(nextRetryDelayMs(1, 100)).toBe(100);
    expect(nextRetryDelayMs(7, 100)).toBe(72_000);
    expect(nextRetryDelayMs(0, 100)).toBeNull();
  });
});
