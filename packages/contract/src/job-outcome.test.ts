import { describe, expect, it } from '@jest/globals';
import { jobOutcome, jobProgress, zipProgress, type OutcomeZip } from './job-outcome';

const zip = (id: string, sequence: number, over: Partial<OutcomeZip> = {}): OutcomeZip => ({ id, sequence, status: 'completed', filename: `${id}.zip`, fileCount: 1, size: 10n, error: null, ...over });

describe('jobOutcome', () => {
  it('lists file errors, then ZIP failures, then the job failure; each ZIP carries its own', () => {
    const out = jobOutcome({
      files: [
        { url: 'https://a.test/1', error: null, zipId: 'z1' },
        { url: 'https://a.test/2', error: 'HTTP 404', zipId: 'z2' },
        { url: 'https://a.test/3', error: 'too large', zipId: null },
      ],
      // Given out of order: entries come out by sequence.
      zips: [zip('z2', 2, { status: 'failed', error: 'over the archive limit', size: null }), zip('z1', 1)],
      jobError: 'every ZIP failed',
      downloadUrl: (z) => (z.status === 'completed' ? `https://dl.test/${z.id}` : null),
    });
    expect(out.errors).toEqual([
      { url: 'https://a.test/2', error: 'HTTP 404' },
      { url: 'https://a.test/3', error: 'too large' },
      { url: '', error: 'over the archive limit' },
      { url: '', error: 'every ZIP failed' },
    ]);
    expect(out.zips).toEqual([
      { id: 'z1', sequence: 1, status: 'completed', filename: 'z1.zip', file_count: 1, size: 10, download_url: 'https://dl.test/z1', bytes_done: 10, expected_size: 10 },
      {
        id: 'z2',
        sequence: 2,
        status: 'failed',
        filename: 'z2.zip',
        file_count: 1,
        size: null,
        download_url: null,
        errors: [
          { url: 'https://a.test/2', error: 'HTTP 404' },
          { url: '', error: 'over the archive limit' },
        ],
        bytes_done: 0,
        expected_size: null,
      },
    ]);
  });

  it('gives a size only to a completed ZIP', () => {
    const out = jobOutcome({ files: [], zips: [zip('z', 1, { status: 'processing', size: 99n })], jobError: null, downloadUrl: () => null });
    expect(out).toEqual({ errors: [], zips: [expect.objectContaining({ size: null, download_url: null })] });
    expect(out.zips[0]).not.toHaveProperty('errors');
  });
});

describe('progress', () => {
  it('reports bytes done against the predicted size; a stream ZIP is never written ahead', () => {
    const running = { status: 'processing' as const, size: null, bytesDone: 400n, plannedSize: 1000n };
    expect(zipProgress(running, false)).toEqual({ bytes_done: 400, expected_size: 1000 });
    expect(zipProgress({ ...running, status: 'completed', size: 1000n }, true)).toEqual({ bytes_done: 0, expected_size: 1000 });
    expect(zipProgress({ status: 'pending', size: null, plannedSize: null }, false)).toEqual({ bytes_done: 0, expected_size: null });
  });

  it('is the share of bytes over all ZIPs, below 1 until completed, null while a size is unknown', () => {
    expect(jobProgress('processing', [{ bytes_done: 500, expected_size: 1000 }, { bytes_done: 0, expected_size: 1000 }])).toBe(0.25);
    expect(jobProgress('processing', [{ bytes_done: 9999, expected_size: 10000 }])).toBe(0.999);
    expect(jobProgress('processing', [{ bytes_done: 1, expected_size: null }])).toBeNull();
    expect(jobProgress('preparing', [])).toBeNull();
    expect(jobProgress('completed', [{ bytes_done: 0, expected_size: null }])).toBe(1);
  });
});
