import { describe, expect, it } from '@jest/globals';
import {
  EXPIRES_IN_DEFAULT,
  EXPIRES_IN_MIN,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  MAX_FILES_PER_JOB_ANY_PLAN,
  MAX_ZIP_SIZE_MAX,
  MAX_ZIP_SIZE_MIN,
  METADATA_KEY_MAX_CHARS,
  METADATA_MAX_PAIRS,
  METADATA_VALUE_MAX_CHARS,
  PLANS,
  PLAN_NAMES,
  archiveBytes,
  describeBytes,
  describeSeconds,
  filesPerJob,
  isPlanName,
} from './plans';

describe('PLANS (docs/api.md#limits, GB = 10^9 bytes, TB = 10^12 bytes)', () => {
  it('matches the Limits table', () => {
    expect(PLANS).toEqual({
      free: {
        storedFilesPerJob: 100,
        streamFilesPerJob: 100,
        storedArchiveBytes: 2_000_000_000,
        streamArchiveBytes: 2_000_000_000,
        storedQuotaGbDays: 100,
        streamQuotaBytes: 20_000_000_000,
        maxRetentionSeconds: 86_400,
      },
      starter: {
        storedFilesPerJob: 1_000,
        streamFilesPerJob: 1_000,
        storedArchiveBytes: 10_000_000_000,
        streamArchiveBytes: 10_000_000_000,
        storedQuotaGbDays: 3_000,
        streamQuotaBytes: 500_000_000_000,
        maxRetentionSeconds: 604_800,
      },
      pro: {
        storedFilesPerJob: 5_000,
        streamFilesPerJob: 5_000,
        storedArchiveBytes: 50_000_000_000,
        streamArchiveBytes: 50_000_000_000,
        storedQuotaGbDays: 20_000,
        streamQuotaBytes: 3_000_000_000_000,
        maxRetentionSeconds: 5_184_000,
      },
      scale: {
        storedFilesPerJob: 20_000,
        streamFilesPerJob: 20_000,
        storedArchiveBytes: 100_000_000_000,
        streamArchiveBytes: 100_000_000_000,
        storedQuotaGbDays: 75_000,
        streamQuotaBytes: 20_000_000_000_000,
        maxRetentionSeconds: 7_776_000,
      },
    });
    expect(PLAN_NAMES).toEqual(['free', 'starter', 'pro', 'scale']);
    expect(MAX_FILES_PER_JOB_ANY_PLAN).toBe(20_000);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(PLANS)).toBe(true);
    expect(Object.isFrozen(PLANS.free)).toBe(true);
  });

  it('looks limits up by plan and mode', () => {
    expect(filesPerJob('starter', 'stream')).toBe(1_000);
    expect(archiveBytes('pro', 'stored')).toBe(50e9);
    expect(isPlanName('scale')).toBe(true);
    expect(isPlanName('gold')).toBe(false);
    expect(isPlanName('toString')).toBe(false);
  });

  it('holds the other constants of docs/api.md#limits', () => {
    expect([EXPIRES_IN_MIN, EXPIRES_IN_DEFAULT, MAX_ZIP_SIZE_MIN, MAX_ZIP_SIZE_MAX]).toEqual([300, 86_400, 104_857_600, 536_870_912_000]);
    expect([METADATA_MAX_PAIRS, METADATA_KEY_MAX_CHARS, METADATA_VALUE_MAX_CHARS]).toEqual([10, 128, 1_024]);
    expect([LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX]).toEqual([20, 100]);
  });

  it('describes seconds and bytes for messages', () => {
    expect([86_400, 604_800, 5_184_000, 3_600, 300].map(describeSeconds)).toEqual(['24 h', '7 d', '60 d', '1 h', '300 s']);
    expect([2e9, 3e12, 1_500].map(describeBytes)).toEqual(['2 GB', '3 TB', '1500 bytes']);
  });
});
