import { describe, expect, it } from '@jest/globals';
import { fileHeadersSchema, headerNamesOf, parseS3Prefix, parseS3Url, s3UrlProblem, sourceCreateSchema } from './private-sources';
import { isListedObjectKey, isPrefixEntry, listedEntryName, listedObjectUrl, prefixFolder } from './prefix-entries';
import { formatZodError, jobCreateSchema } from './schemas';

describe('prefix entries', () => {
  it('are s3:// URLs ending in "/" with a source; the bucket alone lists all of it', () => {
    expect(parseS3Prefix('s3://b1b/photos/2024/')).toEqual({ bucket: 'b1b', prefix: 'photos/2024/' });
    expect(parseS3Prefix('s3://b1b/')).toEqual({ bucket: 'b1b', prefix: '' });
    expect(parseS3Prefix('s3://b1b/photos/a.jpg')).toBeNull();
    expect(s3UrlProblem('s3://acme-reports/')).toBeNull();
    expect(s3UrlProblem('s3://acme-reports/photos/')).toBeNull();
    expect(isPrefixEntry({ url: 's3://b1b/photos/', sourceId: 's' })).toBe(true);
    expect(isPrefixEntry({ url: 's3://b1b/photos/a', sourceId: 's' })).toBe(false);
  });

  it('name their objects by the key below the prefix, in a folder: the given filename, else the last segment, else the bucket', () => {
    expect(prefixFolder('s3://b1b/photos/2024/', null)).toBe('2024');
    expect(prefixFolder('s3://b1b/photos/2024/', 'trip')).toBe('trip');
    expect(prefixFolder('s3://b1b/', undefined)).toBe('b1b');
    expect(listedEntryName('2024', 'photos/2024/', 'photos/2024/trip/b.jpg')).toBe('2024/trip/b.jpg');
    expect(isListedObjectKey('photos/2024/trip/')).toBe(false);
    expect(listedObjectUrl('b1b', 'photos/a b.jpg')).toBe('s3://b1b/photos/a b.jpg');
  });

  it('make a split job\'s zip_filename expand for as many ZIPs as a job may have files, a prefix standing for many', () => {
    // 246 characters and "-{n}": fits one ZIP (or 2 of a two-file job), not ZIP 20,000.
    const zip_filename = `${'a'.repeat(246)}-{n}.zip`;
    const body = (url: string) => ({ files: [{ url, source: 'src' }, { url: 's3://b1b/k2', source: 'src' }], max_zip_size_bytes: 104_857_600, zip_filename });
    expect(jobCreateSchema.safeParse(body('s3://b1b/k1')).success).toBe(true);
    expect(formatZodError(jobCreateSchema.safeParse(body('s3://b1b/photos/')).error!)).toMatch(/^zip_filename: .*\(a split job of up to 20000 files can have up to 20000 ZIPs\)$/);
  });
});

describe('s3:// URLs', () => {
  it('take the key literally after the bucket', () => {
    expect(parseS3Url('s3://acme-reports/2026/q3 summary%20x.pdf')).toEqual({ bucket: 'acme-reports', key: '2026/q3 summary%20x.pdf' });
    expect(s3UrlProblem('s3://acme-reports/k')).toBeNull();
    expect(s3UrlProblem('s3://acme-reports')).toMatch(/must name a bucket and a key/);
    expect(s3UrlProblem('s3:///key')).toMatch(/must name a bucket and a key/);
    expect(s3UrlProblem('s3://Bad_Bucket/k')).toMatch(/is not a valid bucket name/);
    expect(s3UrlProblem('s3://bucket/a\nb')).toMatch(/control characters/);
    // Credentials in an s3:// URL are refused and never repeated (the source holds them).
    expect(s3UrlProblem('s3://AKIAX:s3cretpw@bucket/k')).toBe('must not contain a user name or password: name a source, which holds the credentials');
  });
});

describe('file headers', () => {
  it('keep names and values, and report names (never values) in their messages', () => {
    expect(fileHeadersSchema.parse({ Authorization: 'Bearer x', 'X-Api-Key': 'k' })).toEqual({ Authorization: 'Bearer x', 'X-Api-Key': 'k' });
    expect(headerNamesOf({ 'X-B': '1', authorization: '2' })).toEqual(['authorization', 'x-b']);
    const twice = fileHeadersSchema.safeParse({ 'X-A': 'secret-one', 'x-a': 'secret-two', Connection: 'close', 'Proxy-Foo': 'p' });
    const message = formatZodError(twice.error!);
    expect(message).toMatch(/header "x-a" is given twice/);
    expect(message).toMatch(/header "Connection" is a header the service sets itself/);
    expect(message).not.toMatch(/secret-one|secret-two/);
  });

  it('belong to http(s) entries, and sources to s3:// ones', () => {
    const problem = (file: unknown) => formatZodError(jobCreateSchema.safeParse({ files: [file] }).error!);
    expect(problem({ url: 's3://bucket/k', source: 'x', headers: { A: 'b' } })).toBe("files[0].headers: are only for http and https URLs (an s3:// URL is read with its source's credentials)");
    expect(jobCreateSchema.safeParse({ files: [{ url: 's3://bucket/k', source: 'x' }] }).success).toBe(true);
  });
});

describe('POST /sources body', () => {
  it('checks the name, the type and the endpoint', () => {
    const base = { name: 'r2-photos', type: 's3', region: 'auto', access_key_id: 'a', secret_access_key: 's' };
    expect(sourceCreateSchema.parse({ ...base, endpoint: 'https://acct.r2.cloudflarestorage.com' })).toMatchObject({ force_path_style: false });
    const bad = sourceCreateSchema.safeParse({ ...base, name: 'no spaces', type: 'gcs', endpoint: 'ftp://x/' });
    expect(formatZodError(bad.error!)).toBe('name: must be 1 to 64 of A-Z, a-z, 0-9, "_" and "-"; type: must be "s3"; endpoint: must be an http or https URL of a host, like https://<account>.r2.cloudflarestorage.com');
    for (const endpoint of ['https://AKIAX:s3cretpw@acct.r2.cloudflarestorage.com', 'https://s3cretpw@minio.example:9000/']) {
      const message = formatZodError(sourceCreateSchema.safeParse({ ...base, endpoint }).error!);
      expect(message).toBe('endpoint: must not contain a user name or password: the source\'s keys are access_key_id and secret_access_key');
    }
  });
});
