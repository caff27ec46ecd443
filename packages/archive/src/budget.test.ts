import { describe, expect, it } from '@jest/globals';
import { PLANS } from '@ap/contract';
import { partBufferBytes, partSizeFor } from '@ap/storage';
import { bodyBudgetBesideParts } from './pack';

const MiB = 1024 * 1024;

describe('a bin\'s fetch budget', () => {
  it('holds the upload\'s part buffers and the bodies fetched ahead together, for every plan\'s archives', () => {
    const budget = 64 * MiB; // FETCH_BUDGET_BYTES by default
    for (const plan of Object.values(PLANS)) {
      for (const archive of [1 * MiB, 600 * MiB, 4 * 1024 * MiB, plan.storedArchiveBytes]) {
        const partSize = partSizeFor(Math.min(archive, plan.storedArchiveBytes));
        const bodies = bodyBudgetBesideParts(budget, partSize);
        expect(bodies + partBufferBytes(partSize)).toBeLessThanOrEqual(budget);
        expect(bodies).toBeGreaterThanOrEqual(budget / 2);
      }
    }
    // The 8 MiB parts of most archives leave the bodies 48 MiB.
    expect(bodyBudgetBesideParts(64 * MiB, 8 * MiB)).toBe(48 * MiB);
  });

  it('leaves the bodies a quarter of it when the parts alone would take it all', () => {
    expect(bodyBudgetBesideParts(64 * MiB, 52 * MiB)).toBe(16 * MiB);
    expect(bodyBudgetBesideParts(16 * MiB, 8 * MiB)).toBe(4 * MiB);
  });
});
