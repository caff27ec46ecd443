import { describe, expect, it } from '@jest/globals';
import { jobOutcome, type OutcomeZip } from './job-outcome';

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
      { id: 'z1', sequence: 1, status: 'completed', filename: 'z1.zip', file_count: 1, size: 10, download_url: 'https://dl.test/z1' },
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
      },
    ]);
  });

  it('gives a size only to a completed ZIP', () => {
    const out = jobOutcome({ files: [], zips: [zip('z', 1, { status: 'processing', size: 99n })], jobError: null, downloadUrl: () => null });
    expect(out).toEqual({ errors: [], zips: [expect.objectContaining({ size: null, download_url: null })] });
    expect(out.zips[0]).not.toHaveProperty('errors');
  });
});
