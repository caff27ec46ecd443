import { describe, expect, it } from '@jest/globals';
import { webhookEventBodySchema } from '@ap/contract';
import { eventBody, withDownloadUrls } from './body';

const job = { id: '6f1c1f5e-8d0c-4a44-9b1e-2d7c1b7e9a01', status: 'completed' as const, urlCount: 3, fileCount: 2, metadata: { ref: 'A-1' }, error: null };
const zips = [
  { id: 'z2', sequence: 2, status: 'failed' as const, filename: 'b.zip', fileCount: 1, size: null, error: 'archive exceeds the plan\'s per-archive limit' },
  { id: 'z1', sequence: 1, status: 'completed' as const, filename: 'a.zip', fileCount: 2, size: 1234n, error: null },
];
const failedFiles = [{ url: 'https://example.com/x', error: 'HTTP 404', zipId: 'z1' }];
const now = new Date('2026-11-25T12:00:00.000Z');

describe('event body', () => {
  it('has the decided fields, zips in order with their errors, and no link until sent', () => {
    const body = eventBody({ deliveryId: '0b3f9a36-2f4b-4f8e-9a53-9b3c1f0e7d11', event: 'job.completed', job, zips, failedFiles, now });
    expect(webhookEventBodySchema.parse(body)).toEqual(body);
    expect(Object.keys(body)).toEqual(['delivery_id', 'event', 'job_id', 'status', 'url_count', 'file_count', 'errors', 'zips', 'metadata', 'timestamp']);
    expect(body.zips.map((z) => [z.id, z.size, z.download_url])).toEqual([
      ['z1', 1234, null],
      ['z2', null, null],
    ]);
    expect(body.errors).toEqual([
      { url: 'https://example.com/x', error: 'HTTP 404' },
      { url: '', error: "archive exceeds the plan's per-archive limit" },
    ]);
    expect(body.zips[0]!.errors).toEqual([{ url: 'https://example.com/x', error: 'HTTP 404' }]);
    expect(body.timestamp).toBe('2026-11-25T12:00:00.000Z');
  });

  it('signs links for completed ZIPs of a completed job that has not expired', () => {
    const body = eventBody({ deliveryId: '0b3f9a36-2f4b-4f8e-9a53-9b3c1f0e7d11', event: 'job.completed', job, zips, failedFiles: [], now });
    const link = (zipId: string, expiresAt: Date) => `https://x/download/${zipId}.${expiresAt.getTime()}`;
    const expiresAt = new Date(now.getTime() + 3600_000);
    expect(withDownloadUrls(body, { expiresAt }, now, link).zips.map((z) => z.download_url)).toEqual([`https://x/download/z1.${expiresAt.getTime()}`, null]);
    expect(withDownloadUrls(body, { expiresAt: now }, now, link).zips.map((z) => z.download_url)).toEqual([null, null]);
    const failed = eventBody({ deliveryId: '0b3f9a36-2f4b-4f8e-9a53-9b3c1f0e7d11', event: 'job.failed', job: { ...job, status: 'failed', error: 'none of the URLs could be fetched' }, zips: [], failedFiles: [], now });
    expect(failed.errors).toEqual([{ url: '', error: 'none of the URLs could be fetched' }]);
  });

  it('download.completed carries what the download delivered', () => {
    const download = { zip_id: 'z1', bytes_sent: 100, range: { start: 0, end: 99 }, complete: false };
    const body = eventBody({ deliveryId: '0b3f9a36-2f4b-4f8e-9a53-9b3c1f0e7d11', event: 'download.completed', job, zips, failedFiles: [], now, download });
    expect(webhookEventBodySchema.parse(body).download).toEqual(download);
  });

  it('gives each ZIP its progress figures; a stream job\'s ZIPs are never written ahead', () => {
    const stored = eventBody({ deliveryId: '0b3f9a36-2f4b-4f8e-9a53-9b3c1f0e7d11', event: 'job.completed', job, zips, failedFiles: [], now });
    expect(stored.zips.map((z) => [z.bytes_done, z.expected_size])).toEqual([[1234, 1234], [0, null]]);
    const stream = eventBody({ deliveryId: '0b3f9a36-2f4b-4f8e-9a53-9b3c1f0e7d11', event: 'job.completed', job: { ...job, mode: 'stream' }, zips: [{ ...zips[1]!, plannedSize: 1234n }], failedFiles: [], now });
    expect(stream.zips.map((z) => [z.bytes_done, z.expected_size])).toEqual([[0, 1234]]);
  });
});
