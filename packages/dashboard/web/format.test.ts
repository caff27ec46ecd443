import { describe, expect, it } from '@jest/globals';
import { fieldErrors, formatBytes } from './format';

describe('fieldErrors', () => {
  it('puts each problem under its top-level field, keeping the path below it', () => {
    expect(fieldErrors('zip_filename: unknown placeholder "{x}"; files[1].url: must be an http or https URL; mode: invalid option')).toEqual({
      zip_filename: ['unknown placeholder "{x}"'],
      files: ['[1].url: must be an http or https URL'],
      mode: ['invalid option'],
    });
  });

  it('does not split a problem whose own text contains "; "', () => {
    const message = 'zip_filename: unknown placeholder "{nope}"; the placeholders are {n}, {n2}, {n3}, {total} and {date}';
    expect(fieldErrors(message)).toEqual({ zip_filename: ['unknown placeholder "{nope}"; the placeholders are {n}, {n2}, {n3}, {total} and {date}'] });
  });

  it('keeps a message without a field path whole', () => {
    expect(fieldErrors('the monthly stored quota of your plan is used up; overage is disabled')).toEqual({
      '': ['the monthly stored quota of your plan is used up; overage is disabled'],
    });
  });
});

describe('formatBytes', () => {
  it('writes sizes as the CLI and the API do, and a dash for none', () => {
    expect([0, 999, 1000, 251_234, 12_345_678, 104_857_600, 2e9, null].map(formatBytes)).toEqual(['0 B', '999 B', '1 kB', '251.2 kB', '12.3 MB', '104.9 MB', '2 GB', '—']);
  });
});
