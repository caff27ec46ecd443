import { describe, expect, it } from '@jest/globals';
import type { z } from 'zod';
import {
  apiKeyCreateSchema,
  checkArchiveLimit,
  checkPlanLimits,
  formatIssuePath,
  formatZodError,
  isHttpUrl,
  jobCreateSchema,
  listJobsQuerySchema,
  loginSchema,
  parseIsoDateTime,
  retrySchema,
} from './schemas';

/** The formatted message of a failing parse. */
function problem(schema: z.ZodType, input: unknown): string {
  const result = schema.safeParse(input);
  if (result.success) throw new Error(`expected a failure, got ${JSON.stringify(result.data)}`);
  return formatZodError(result.error);
}

function parsed<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new Error(`unexpected failure: ${formatZodError(result.error)}`);
  return result.data;
}

const file = { url: 'https://example.com/a.pdf' };

describe('jobCreateSchema', () => {
  it('fills the defaults of docs/api.md#job-create-fields', () => {
    expect(parsed(jobCreateSchema, { files: [file] })).toEqual({
      files: [file],
      mode: 'stored',
      expires_in: 86_400,
      fail_on_url_error: true,
      split_strategy: 'preserve-order',
      allow_oversize_zips: true,
      fail_on_zip_error: true,
      compression: 'store',
      format: 'zip',
      manifest: false,
    });
  });

  it('keeps every field of a full request', () => {
    const body = {
      files: [{ url: 'http://h/x', filename: 'dir/x.bin' }, { url: 'https://h/y?q=1', filename: null }],
      mode: 'stream',
      zip_filename: 'photos-{n}-of-{total}.zip',
      expires_in: 300,
      fail_on_url_error: false,
      metadata: { order: '42', 'a key': '' },
      max_zip_size_bytes: 536_870_912_000,
      split_strategy: 'ffd',
      allow_oversize_zips: false,
      fail_on_zip_error: false,
      compression: 'store',
      format: 'tar',
      folders: ['dir/', 'empty/'],
      manifest: false,
    };
    expect(parsed(jobCreateSchema, body)).toEqual(body);
  });

  it('accepts null for the optional fields whose absence means something', () => {
    expect(parsed(jobCreateSchema, { files: [file], zip_filename: null, metadata: null, max_zip_size_bytes: null })).toMatchObject({
      zip_filename: null,
      metadata: null,
      max_zip_size_bytes: null,
    });
    expect(problem(jobCreateSchema, { files: [file], expires_in: null })).toBe('expires_in: must be a whole number of seconds, at least 300');
    expect(problem(jobCreateSchema, { files: [file], fail_on_url_error: null })).toBe('fail_on_url_error: must be true or false');
  });

  it('requires a JSON object with at least one file', () => {
    expect(problem(jobCreateSchema, undefined)).toBe('the request body must be a JSON object');
    expect(problem(jobCreateSchema, [file])).toBe('the request body must be a JSON object');
    expect(problem(jobCreateSchema, {})).toBe('files: is required');
    expect(problem(jobCreateSchema, { files: [] })).toBe('files: must contain at least one file entry');
    expect(problem(jobCreateSchema, { files: file })).toBe('files: must be an array of file entries');
    expect(problem(jobCreateSchema, { files: ['https://h/x'] })).toBe('files[0]: must be an object with "url" and an optional "filename"');
  });

  it('does not cap the number of files (over-plan counts are 403, not 400)', () => {
    const files = Array.from({ length: 20_001 }, (_, i) => ({ url: `https://h/${i}` }));
    expect(parsed(jobCreateSchema, { files }).files).toHaveLength(20_001);
  });

  it('rejects unknown fields, top level and in file entries', () => {
    expect(problem(jobCreateSchema, { files: [file], max_zip_size: 1 })).toBe('unknown field "max_zip_size"');
    expect(problem(jobCreateSchema, { files: [{ ...file, name: 'x' }], a: 1, b: 2 })).toBe('files[0]: unknown field "name"; unknown fields "a", "b"');
  });

  it('validates URLs', () => {
    for (const url of ['https://h', 'http://h:8080/a%20b', 'https://h/x@y', 'http://[::1]/x', `https://h/${'a'.repeat(8_000)}`]) {
      expect({ url, ok: isHttpUrl(url) }).toEqual({ url, ok: true });
    }
    for (const url of ['ftp://h/x', 'file:///etc/passwd', 'h/x', '', ' https://h/x', 'https://h/x ', 'https://h/\tx', 'https://', 'mailto:a@b.c', 'javascript:alert(1)']) {
      expect({ url, ok: isHttpUrl(url) }).toEqual({ url, ok: false });
    }
    expect(problem(jobCreateSchema, { files: [file, file, { url: 'ftp://h/x' }] })).toBe('files[2].url: must be an http or https URL');
    // WHATWG parsing would repair these into URLs with a host the user never wrote.
    for (const url of ['http:///path', 'http:127.0.0.1', 'http:/127.0.0.1/x', 'HTTPS:example.com', 'http:\\\\h\\x', 'http:/\\h/x', 'http://@/x', 'http://u:p@/x', 'http://:80/x', 'http://./x', 'http://../x', 'http://?x', 'http://#x']) {
      expect({ url, ok: isHttpUrl(url) }).toEqual({ url, ok: false });
    }
    for (const url of ['HTTP://h/x', 'http://h:/x', 'http://[2001:db8::1]:8080/x', 'http://h/a@b:c', 'http://1.2.3.4']) {
      expect({ url, ok: isHttpUrl(url) }).toEqual({ url, ok: true });
    }
    expect(problem(jobCreateSchema, { files: [{ url: 'http:127.0.0.1' }] })).toBe(
      'files[0].url: must be an http or https URL with a host, like https://example.com/file (it must start with "http://")',
    );
    expect(problem(jobCreateSchema, { files: [{ url: 'http:///path' }] })).toBe('files[0].url: must be an http or https URL with a host, like https://example.com/file (the host is missing)');
    expect(problem(jobCreateSchema, { files: [{ url: `https://h/${'a'.repeat(8_200)}` }] })).toBe('files[0].url: must be at most 8192 characters');
    expect(problem(jobCreateSchema, { files: [{ url: 5 }, {}] })).toBe('files[0].url: must be a string; files[1].url: is required');
  });

  it('refuses a URL with credentials in its authority, without repeating them', () => {
    for (const url of ['https://user:s3cretpw@h/x', 'https://s3cretpw@h/x', 'http://:s3cretpw@h/x', 'HTTPS://u:s3cretpw@h:8443/x?y#z', 'http://u@h@i/x', 'https://@h/x', 'http://u:s3cretpw@h\\x']) {
      expect({ url, ok: isHttpUrl(url) }).toEqual({ url, ok: false });
      const message = problem(jobCreateSchema, { files: [{ url }] });
      expect(message).toMatch(/^files\[0\]\.url: must not contain a user name or password/);
      expect(message).not.toContain('s3cretpw');
    }
  });

  it('refuses a URL with a character it cannot carry raw, naming the field and the encoding', () => {
    for (const url of ['https://h/a b.pdf', 'https://h/a\u00a0b', 'https://h/x?q="1"', 'https://h/<x>', 'http://h\\x', 'https://h/a^b', 'https://h/`x`', 'https://h/{x}', 'https://h/a|b']) {
      expect({ url, ok: isHttpUrl(url) }).toEqual({ url, ok: false });
    }
    expect(problem(jobCreateSchema, { files: [file, { url: 'https://h/my file.pdf' }] })).toBe('files[1].url: must not contain a space: a URL carries it percent-encoded (%20)');
    expect(problem(jobCreateSchema, { files: [{ url: 'https://h/a|b' }] })).toBe('files[0].url: must not contain "|": a URL carries it percent-encoded (%7C)');
  });

  it('validates given filenames with the entry-name rules', () => {
    expect(problem(jobCreateSchema, { files: [{ ...file, filename: '../x' }] })).toBe('files[0].filename: must not contain a ".." path segment');
    expect(problem(jobCreateSchema, { files: [{ ...file, filename: '/x' }] })).toContain('files[0].filename: must be a relative path');
    expect(problem(jobCreateSchema, { files: [{ ...file, filename: 'a\\b' }] })).toContain('files[0].filename: must not contain a backslash');
    expect(problem(jobCreateSchema, { files: [{ ...file, filename: 'x'.repeat(256) }] })).toBe('files[0].filename: must be at most 255 bytes in UTF-8 (got 256)');
    expect(problem(jobCreateSchema, { files: [{ ...file, filename: 7 }] })).toBe('files[0].filename: must be a string');
  });

  it('validates mode and split_strategy', () => {
    expect(problem(jobCreateSchema, { files: [file], mode: 'fast' })).toBe('mode: must be "stored" or "stream"');
    expect(problem(jobCreateSchema, { files: [file], split_strategy: 'best' })).toBe('split_strategy: must be "preserve-order" or "ffd"');
  });

  it('expires_in: whole seconds, at least 300; no upper bound here (the plan check is a 403)', () => {
    expect(parsed(jobCreateSchema, { files: [file], expires_in: 300 }).expires_in).toBe(300);
    expect(parsed(jobCreateSchema, { files: [file], expires_in: 1e12 }).expires_in).toBe(1e12);
    for (const expires_in of [299, 0, -1, 300.5, '3600']) {
      expect(problem(jobCreateSchema, { files: [file], expires_in })).toBe('expires_in: must be a whole number of seconds, at least 300');
    }
  });

  it('max_zip_size_bytes: whole bytes in 104857600..536870912000', () => {
    expect(parsed(jobCreateSchema, { files: [file], max_zip_size_bytes: 104_857_600 }).max_zip_size_bytes).toBe(104_857_600);
    for (const max_zip_size_bytes of [104_857_599, 536_870_912_001, 2e8 + 0.5, '200000000', true]) {
      expect(problem(jobCreateSchema, { files: [file], max_zip_size_bytes })).toBe(
        'max_zip_size_bytes: must be a whole number of bytes from 104857600 (104.9 MB) to 536870912000 (536.9 GB), or null',
      );
    }
  });

  it('booleans are JSON booleans', () => {
    expect(problem(jobCreateSchema, { files: [file], allow_oversize_zips: 'true' })).toBe('allow_oversize_zips: must be true or false');
    expect(problem(jobCreateSchema, { files: [file], fail_on_zip_error: 0 })).toBe('fail_on_zip_error: must be true or false');
  });

  it('metadata: at most 10 string pairs, keys <= 128 and values <= 1024 characters', () => {
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'v']));
    expect(parsed(jobCreateSchema, { files: [file], metadata: ten }).metadata).toEqual(ten);
    expect(problem(jobCreateSchema, { files: [file], metadata: { ...ten, k10: 'v' } })).toBe('metadata: must have at most 10 key/value pairs (got 11)');
    expect(parsed(jobCreateSchema, { files: [file], metadata: { ['k'.repeat(128)]: 'v'.repeat(1024) } }).metadata).toEqual({ ['k'.repeat(128)]: 'v'.repeat(1024) });
    expect(problem(jobCreateSchema, { files: [file], metadata: { ['k'.repeat(129)]: 'v' } })).toContain('metadata: key "kkkk');
    expect(problem(jobCreateSchema, { files: [file], metadata: { ['k'.repeat(129)]: 'v' } })).toContain('is longer than 128 characters (129)');
    expect(problem(jobCreateSchema, { files: [file], metadata: { note: 'v'.repeat(1025) } })).toBe('metadata.note: must be at most 1024 characters (got 1025)');
    expect(problem(jobCreateSchema, { files: [file], metadata: { n: 1, 'a b': true } })).toBe('metadata.n: must be a string; metadata["a b"]: must be a string');
    expect(problem(jobCreateSchema, { files: [file], metadata: ['a'] })).toBe('metadata: must be an object of string values');
    expect(problem(jobCreateSchema, { files: [file], metadata: 'x' })).toBe('metadata: must be an object of string values');
    expect(problem(jobCreateSchema, { files: [file], metadata: { a: 'x\u0000y' } })).toBe('metadata.a: must not contain NUL characters or unpaired surrogates');
  });

  it('metadata keeps a "__proto__" key as data instead of dropping it', () => {
    const body = JSON.parse('{"files":[{"url":"https://h/x"}],"metadata":{"__proto__":"v","a":"b"}}');
    const out = parsed(jobCreateSchema, body).metadata!;
    expect(Object.keys(out)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":"v","a":"b"}');
  });

  it('zip_filename: max 255 characters and a valid template, with the problem named', () => {
    expect(problem(jobCreateSchema, { files: [file], zip_filename: 'a'.repeat(256) })).toBe('zip_filename: must be at most 255 characters (got 256)');
    expect(problem(jobCreateSchema, { files: [file], zip_filename: 'abc_{foo}.zip' })).toContain('zip_filename: unknown placeholder "{foo}"');
    expect(problem(jobCreateSchema, { files: [file], zip_filename: 'abc_{n.zip' })).toContain('zip_filename: unbalanced braces');
    expect(problem(jobCreateSchema, { files: [file], zip_filename: 'a/{n}.zip' })).toContain('zip_filename: expands to "a/1.zip"');
    expect(problem(jobCreateSchema, { files: [file], zip_filename: 5 })).toBe('zip_filename: must be a string');
  });

  it('zip_filename of a split job must expand for one ZIP per file', () => {
    const name = `${'a'.repeat(249)}.zip`; // 253 characters: fine alone, _NN makes 256
    const files = Array.from({ length: 10 }, () => file);
    expect(parsed(jobCreateSchema, { files, zip_filename: name }).zip_filename).toBe(name);
    expect(parsed(jobCreateSchema, { files: files.slice(0, 9), zip_filename: name, max_zip_size_bytes: 104_857_600 }).zip_filename).toBe(name);
    expect(problem(jobCreateSchema, { files, zip_filename: name, max_zip_size_bytes: 104_857_600 })).toBe(
      'zip_filename: expands to a file name of 256 characters for ZIP 1 of 10; the most is 255 (a split job of 10 files can have up to 10 ZIPs)',
    );
  });
});

describe('checkPlanLimits (403 PLAN_LIMIT_EXCEEDED)', () => {
  const files = (n: number) => ({ length: n });

  it('files per job, per plan and mode', () => {
    expect(checkPlanLimits('free', { files: files(100), mode: 'stored', expires_in: 86_400 })).toBeNull();
    expect(checkPlanLimits('free', { files: files(101), mode: 'stored', expires_in: 300 })).toEqual({
      code: 'PLAN_LIMIT_EXCEEDED',
      message: 'files: the free plan allows at most 100 files per stored job (got 101)',
    });
    expect(checkPlanLimits('starter', { files: files(1_001), mode: 'stream', expires_in: 300 })?.message).toBe(
      'files: the starter plan allows at most 1000 files per stream job (got 1001)',
    );
    expect(checkPlanLimits('pro', { files: files(5_000), mode: 'stream', expires_in: 300 })).toBeNull();
    expect(checkPlanLimits('pro', { files: files(5_001), mode: 'stored', expires_in: 300 })).not.toBeNull();
    expect(checkPlanLimits('scale', { files: files(20_000), mode: 'stored', expires_in: 300 })).toBeNull();
    expect(checkPlanLimits('scale', { files: files(20_001), mode: 'stored', expires_in: 300 })).not.toBeNull();
  });

  it('retention (expires_in) per plan', () => {
    const at = (plan: 'free' | 'starter' | 'pro' | 'scale', expires_in: number) => checkPlanLimits(plan, { files: files(1), mode: 'stored', expires_in });
    expect(at('free', 86_400)).toBeNull();
    expect(at('free', 86_401)).toEqual({ code: 'PLAN_LIMIT_EXCEEDED', message: 'expires_in: the free plan allows at most 86400 seconds (24 h) (got 86401)' });
    expect(at('starter', 604_800)).toBeNull();
    expect(at('starter', 604_801)?.message).toBe('expires_in: the starter plan allows at most 604800 seconds (7 d) (got 604801)');
    expect(at('pro', 5_184_000)).toBeNull();
    expect(at('pro', 5_184_001)).not.toBeNull();
    expect(at('scale', 7_776_000)).toBeNull();
    expect(at('scale', 7_776_001)?.message).toContain('90 d');
  });
});

describe('checkArchiveLimit (400 INVALID_REQUEST)', () => {
  it('max_zip_size_bytes within the plan per-archive limit (decimal GB)', () => {
    expect(checkArchiveLimit('free', 'stored', null)).toBeNull();
    expect(checkArchiveLimit('free', 'stored', undefined)).toBeNull();
    expect(checkArchiveLimit('free', 'stored', 2_000_000_000)).toBeNull();
    expect(checkArchiveLimit('free', 'stored', 2_000_000_001)).toBe(
      'max_zip_size_bytes: the free plan allows ZIPs of at most 2000000000 bytes (2 GB) in stored mode (got 2000000001)',
    );
    expect(checkArchiveLimit('free', 'stream', 2_147_483_648)).toContain('in stream mode');
    expect(checkArchiveLimit('starter', 'stored', 10e9)).toBeNull();
    expect(checkArchiveLimit('starter', 'stored', 10e9 + 1)).toContain('10 GB');
    expect(checkArchiveLimit('pro', 'stream', 50e9)).toBeNull();
    expect(checkArchiveLimit('pro', 'stream', 50e9 + 1)).not.toBeNull();
    expect(checkArchiveLimit('scale', 'stored', 100e9)).toBeNull();
    expect(checkArchiveLimit('scale', 'stored', 536_870_912_000)).toContain('100 GB');
  });
});

describe('retrySchema', () => {
  it('from_checkpoint defaults to true', () => {
    expect(parsed(retrySchema, {})).toEqual({ from_checkpoint: true });
    expect(parsed(retrySchema, { from_checkpoint: false })).toEqual({ from_checkpoint: false });
    expect(problem(retrySchema, { from_checkpoint: 'false' })).toBe('from_checkpoint: must be true or false');
    expect(problem(retrySchema, { checkpoint: false })).toBe('unknown field "checkpoint"');
  });
});

describe('listJobsQuerySchema', () => {
  it('limit: default 20, decimal 1..100', () => {
    expect(parsed(listJobsQuerySchema, {})).toEqual({ limit: 20 });
    expect(parsed(listJobsQuerySchema, { limit: '1' })).toEqual({ limit: 1 });
    expect(parsed(listJobsQuerySchema, { limit: '100' })).toEqual({ limit: 100 });
    expect(parsed(listJobsQuerySchema, { limit: 50 })).toEqual({ limit: 50 });
    for (const limit of ['0', '101', '-1', '1.5', '1e2', '0x10', ' 5', '', 'abc', ['1', '2'], 7.5]) {
      expect(problem(listJobsQuerySchema, { limit })).toBe('limit: must be a whole number from 1 to 100');
    }
  });

  it('status: pending, processing, completed, failed (not preparing)', () => {
    for (const status of ['pending', 'processing', 'completed', 'failed']) expect(parsed(listJobsQuerySchema, { status })).toEqual({ limit: 20, status });
    expect(problem(listJobsQuerySchema, { status: 'preparing' })).toBe('status: must be "pending", "processing", "completed" or "failed"');
  });

  it('cursor: an opaque non-empty string', () => {
    expect(parsed(listJobsQuerySchema, { cursor: 'WyIyMDI0Il0' })).toEqual({ limit: 20, cursor: 'WyIyMDI0Il0' });
    expect(problem(listJobsQuerySchema, { cursor: '' })).toBe('cursor: must not be empty (omit it for the first page)');
    expect(problem(listJobsQuerySchema, { cursor: ['a', 'b'] })).toBe('cursor: must be a single string');
    expect(problem(listJobsQuerySchema, { cursor: 'x'.repeat(1025) })).toBe('cursor: is not a value returned in meta.next_cursor');
  });

  it('unknown parameters are rejected', () => {
    expect(problem(listJobsQuerySchema, { page: '2' })).toBe('unknown field "page"');
  });
});

describe('apiKeyCreateSchema', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const schema = apiKeyCreateSchema(now);

  it('name optional, at most 255 characters', () => {
    expect(parsed(schema, {})).toEqual({});
    expect(parsed(schema, { name: 'x'.repeat(255) })).toEqual({ name: 'x'.repeat(255) });
    expect(parsed(schema, { name: null })).toEqual({ name: null });
    expect(problem(schema, { name: 'x'.repeat(256) })).toBe('name: must be at most 255 characters (got 256)');
    expect(problem(schema, { name: 5 })).toBe('name: must be a string');
    expect(problem(schema, { name: 'a\u0000b' })).toBe('name: must not contain control characters');
  });

  it('expires_at: ISO 8601 with a zone, in the future, returned canonical', () => {
    expect(parsed(schema, { expires_at: '2030-01-01T00:00:00.001Z' })).toEqual({ expires_at: '2030-01-01T00:00:00.001Z' });
    expect(parsed(schema, { expires_at: '2030-01-01T03:00:00+02:00' })).toEqual({ expires_at: '2030-01-01T01:00:00.000Z' });
    expect(parsed(schema, { expires_at: '2031-06-15T12:30Z' })).toEqual({ expires_at: '2031-06-15T12:30:00.000Z' });
    expect(parsed(schema, { expires_at: '2030-01-01T00:00:01.123456Z' })).toEqual({ expires_at: '2030-01-01T00:00:01.123Z' });
    expect(parsed(schema, { expires_at: null })).toEqual({ expires_at: null });
    expect(problem(schema, { expires_at: '2030-01-01T00:00:00.000Z' })).toBe('expires_at: must be in the future');
    expect(problem(schema, { expires_at: '2030-01-01T01:00:00+02:00' })).toBe('expires_at: must be in the future');
    for (const expires_at of ['tomorrow', '2031-01-01', '2031-01-01T00:00:00', '2031-02-29T00:00:00Z', '2031-13-01T00:00:00Z', '2031-01-01T24:00:00Z']) {
      expect(problem(schema, { expires_at })).toBe('expires_at: must be an ISO 8601 date and time with a time zone, e.g. 2030-01-31T12:00:00Z');
    }
    expect(problem(schema, { expires_at: 1893456000000 })).toBe('expires_at: must be an ISO 8601 date and time');
  });

  it('defaults now to the current time', () => {
    const s = apiKeyCreateSchema();
    expect(problem(s, { expires_at: new Date(Date.now() - 1000).toISOString() })).toBe('expires_at: must be in the future');
    expect(parsed(s, { expires_at: new Date(Date.now() + 60_000).toISOString() }).expires_at).toEqual(expect.any(String));
  });

  it('rejects unknown fields', () => {
    expect(problem(schema, { label: 'x' })).toBe('unknown field "label"');
  });
});

describe('parseIsoDateTime', () => {
  it('parses offsets and leap days, rejects impossible dates', () => {
    expect(parseIsoDateTime('2024-02-29T12:00:00Z')).toBe(Date.UTC(2024, 1, 29, 12));
    expect(parseIsoDateTime('2023-02-29T12:00:00Z')).toBeNull();
    expect(parseIsoDateTime('2024-01-01T00:00:00-05:30')).toBe(Date.UTC(2024, 0, 1, 5, 30));
    expect(parseIsoDateTime('2024-01-01T00:00:60Z')).toBeNull();
    expect(parseIsoDateTime('2024-01-01T00:00:00+24:00')).toBeNull();
    // Years below 100 are not shifted to 19xx (Date.UTC would).
    expect(parseIsoDateTime('0099-01-01T00:00:00Z')).toBe(Date.parse('0099-01-01T00:00:00Z'));
    expect(new Date(parseIsoDateTime('0099-01-01T00:00:00Z')!).getUTCFullYear()).toBe(99);
  });
});

describe('loginSchema', () => {
  it('email and password', () => {
    expect(parsed(loginSchema, { email: 'A@Example.test', password: 'x' })).toEqual({ email: 'A@Example.test', password: 'x' });
    expect(problem(loginSchema, { email: 'not-an-email' })).toBe('email: must be an email address; password: is required');
    expect(problem(loginSchema, { email: 'a@b.test', password: '' })).toBe('password: must not be empty');
    expect(problem(loginSchema, null)).toBe('the request body must be a JSON object');
  });
});

describe('formatZodError', () => {
  it('formats paths', () => {
    expect(formatIssuePath(['files', 2, 'url'])).toBe('files[2].url');
    expect(formatIssuePath(['metadata', 'a key'])).toBe('metadata["a key"]');
    expect(formatIssuePath([])).toBe('');
  });

  it('caps the number of problems reported', () => {
    const files = Array.from({ length: 50 }, () => ({ url: 'ftp://x' }));
    const message = problem(jobCreateSchema, { files });
    expect(message.split('; ')).toHaveLength(11);
    expect(message).toMatch(/^files\[0\]\.url: must be an http or https URL; .*; and 40 more problems$/);
  });
});
