import { describe, expect, it } from '@jest/globals';
import { aggregateJobStatus, type BinStatus } from './status';

describe('aggregateJobStatus', () => {
  const cases: Array<[BinStatus[], boolean, string]> = [
    [['pending'], true, 'pending'],
    [['pending', 'pending'], false, 'pending'],
    [['processing', 'pending'], true, 'processing'],
    [['completed', 'pending'], true, 'processing'],
    [['completed', 'completed'], true, 'completed'],
    [['completed', 'failed'], true, 'failed'],
    [['pending', 'failed'], true, 'failed'],
    [['completed', 'failed'], false, 'completed'],
    [['failed', 'failed'], false, 'failed'],
    [['failed', 'pending'], false, 'processing'],
    [['failed', 'processing'], false, 'processing'],
    [['completed'], false, 'completed'],
  ];
  it.each(cases)('%j with fail_on_zip_error=%s is %s', (bins, failOnZipError, expected) => {
    expect(aggregateJobStatus(bins, failOnZipError)).toBe(expected);
  });
});
