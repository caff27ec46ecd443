import { describe, expect, it } from '@jest/globals';
import type { z } from 'zod';
import { renderZipFilenames } from './filename-template';
import { checkPlanLimits, formatZodError, jobCreateSchema } from './schemas';

const files = [{ url: 'https://example.com/a.txt' }];

function problem(input: unknown): string {
  const result = (jobCreateSchema as z.ZodType).safeParse(input);
  if (result.success) throw new Error(`expected a failure, got ${JSON.stringify(result.data)}`);
  return formatZodError(result.error);
}

describe('format, folders and manifest', () => {
  it('defaults to a zip without folders or manifest, and takes tar in both modes and tar.gz with a level in stored mode', () => {
    expect(jobCreateSchema.parse({ files })).toMatchObject({ format: 'zip', manifest: false });
    expect(jobCreateSchema.parse({ files }).folders).toBeUndefined();
    expect(jobCreateSchema.parse({ files, format: 'tar', mode: 'stream' })).toMatchObject({ format: 'tar', mode: 'stream' });
    expect(jobCreateSchema.parse({ files, format: 'tar.gz', compression_level: 1, manifest: true, folders: ['a/', 'a/b c/'] })).toMatchObject({
      format: 'tar.gz',
      compression_level: 1,
      manifest: true,
      folders: ['a/', 'a/b c/'],
    });
  });

  it('refuses what a format cannot do, naming the field and the reason', () => {
    expect(problem({ files, format: '7z' })).toMatch(/^format: must be "zip", "tar" or "tar.gz"/);
    expect(problem({ files, format: 'tar', encryption: { method: 'aes-256', password: 'a-secret-password' } })).toMatch(/^encryption: is only for format "zip"/);
    expect(problem({ files, format: 'tar', compression: 'deflate' })).toMatch(/^compression: must be "store" with format "tar".*tar\.gz/);
    expect(problem({ files, format: 'tar.gz', compression: 'deflate' })).toMatch(/^compression: must be "store" with format "tar.gz"/);
    expect(problem({ files, format: 'tar.gz', mode: 'stream' })).toMatch(/^format: must be "zip" or "tar" in stream mode/);
    expect(problem({ files, format: 'tar', compression_level: 3 })).toMatch(/^compression_level: is only for compression "deflate" or format "tar.gz"/);
    expect(problem({ files, manifest: true, mode: 'stream' })).toMatch(/^manifest: is only for stored jobs/);
    expect(problem({ files, manifest: 'yes' })).toMatch(/^manifest: must be true or false/);
  });

  it('checks folder names as given file names, each ending in "/"', () => {
    expect(problem({ files, folders: 'a/' })).toMatch(/^folders: must be an array/);
    expect(problem({ files, folders: ['reports'] })).toMatch(/^folders\[0\]: must end with "\/"/);
    expect(problem({ files, folders: ['/abs/'] })).toMatch(/^folders\[0\]: must be a relative path/);
    expect(problem({ files, folders: ['a/../b/'] })).toMatch(/^folders\[0\]: must not contain a "\.\." path segment/);
    expect(problem({ files, folders: ['a//'] })).toMatch(/^folders\[0\]: must not contain an empty path segment/);
    expect(problem({ files, folders: ['ok/', 7] })).toMatch(/^folders\[1\]: must be a string/);
  });

  it('counts folders with files against the plan', () => {
    const request = { files: new Array(99).fill(files[0]), mode: 'stored' as const, expires_in: 3600 };
    expect(checkPlanLimits('free', { ...request, folders: ['a/'] })).toBeNull();
    expect(checkPlanLimits('free', { ...request, folders: ['a/', 'b/'] })?.message).toBe('files: the free plan allows at most 100 files and folders per stored job (got 99 files and 2 folders)');
  });

  it('names archives by format: archive-{id}.tar(.gz), split before the last extension', () => {
    const at = { jobId: 'j1', createdAt: new Date('2026-01-02T00:00:00Z') };
    expect(renderZipFilenames({ ...at, template: null, total: 1, extension: '.tar' })).toEqual({ ok: true, names: ['archive-j1.tar'] });
    expect(renderZipFilenames({ ...at, template: null, total: 2, extension: '.tar.gz' })).toEqual({ ok: true, names: ['archive-j1.tar_1.gz', 'archive-j1.tar_2.gz'] });
    expect(renderZipFilenames({ ...at, template: 'photos.tar.gz', total: 2, extension: '.tar.gz' })).toEqual({ ok: true, names: ['photos.tar_1.gz', 'photos.tar_2.gz'] });
    expect(renderZipFilenames({ ...at, template: 'photos', total: 2, extension: '.tar' })).toEqual({ ok: true, names: ['photos_1.tar', 'photos_2.tar'] });
  });
});
