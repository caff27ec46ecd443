import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from './index';

const valid = {
  DATABASE_URL: 'postgresql://u@h:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  S3_BUCKET: 'archives',
  S3_ACCESS_KEY_ID: 'a',
  S3_SECRET_ACCESS_KEY: 'b',
  PUBLIC_BASE_URL: 'https://example.com/',
  DOWNLOAD_TOKEN_SECRET: 'd'.repeat(32),
  SESSION_SECRET: 's'.repeat(32),
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
};

describe('loadConfig', () => {
  it('applies defaults and normalises values', () => {
    const c = loadConfig(valid);
    expect(c.PORT).toBe(3000);
    expect(c.S3_FORCE_PATH_STYLE).toBe(true);
    expect(c.ALLOW_PRIVATE_URLS).toBe(false);
    expect(c.LOG_LEVEL).toBe('info');
    expect(c.PUBLIC_BASE_URL).toBe('https://example.com');
    expect(loadConfig({ ...valid, ALLOW_PRIVATE_URLS: 'true', PORT: '8080', S3_FORCE_PATH_STYLE: 'false' })).toMatchObject({
      ALLOW_PRIVATE_URLS: true,
      PORT: 8080,
      S3_FORCE_PATH_STYLE: false,
    });
  });

  it('reports one clear line per bad variable', () => {
    let error: ConfigError | undefined;
    try {
      loadConfig({ ...valid, DATABASE_URL: 'mysql://x', PORT: 'eighty', SESSION_SECRET: 'short', ALLOW_PRIVATE_URLS: 'maybe', REDIS_URL: undefined, SECRETS_KEY_PREVIOUS: 'c2hvcnQ=' });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.problems.sort()).toEqual([
      'ALLOW_PRIVATE_URLS must be true or false',
      'DATABASE_URL must be a URL (postgres: or postgresql:)',
      'PORT must be a port number',
      'REDIS_URL is required',
      'SECRETS_KEY_PREVIOUS must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)',
      'SESSION_SECRET must be at least 32 characters',
    ]);
    expect(() => loadConfig({ ...valid, SECRETS_KEY: undefined })).toThrow(/SECRETS_KEY is required/);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ ...valid, PORT: '', LOG_LEVEL: '' })).toMatchObject({ PORT: 3000, LOG_LEVEL: 'info' });
  });
});

describe('fair share settings', () => {
  it('reads SEGMENT_BYTES (1 GiB by default), and refuses one under 64 MiB', () => {
    expect(loadConfig(valid).SEGMENT_BYTES).toBe(1024 ** 3);
    expect(loadConfig({ ...valid, SEGMENT_BYTES: String(64 * 1024 ** 2) }).SEGMENT_BYTES).toBe(64 * 1024 ** 2);
    expect(() => loadConfig({ ...valid, SEGMENT_BYTES: String(64 * 1024 ** 2 - 1) })).toThrow(/SEGMENT_BYTES must be at least 67108864/);
  });

  it('reads PLAN_CONCURRENT_BINS as plan=number pairs over the defaults, and STREAM_DOWNLOADS_PER_USER', () => {
    expect(loadConfig(valid)).toMatchObject({ PLAN_CONCURRENT_BINS: { free: 1, starter: 2, pro: 4, scale: 8 }, STREAM_DOWNLOADS_PER_USER: 20 });
    expect(loadConfig({ ...valid, PLAN_CONCURRENT_BINS: 'free=2, scale=16', STREAM_DOWNLOADS_PER_USER: '5' })).toMatchObject({
      PLAN_CONCURRENT_BINS: { free: 2, starter: 2, pro: 4, scale: 16 },
      STREAM_DOWNLOADS_PER_USER: 5,
    });
  });

  it('names a bad pair', () => {
    expect(() => loadConfig({ ...valid, PLAN_CONCURRENT_BINS: 'free=1,gold=3' })).toThrow(/PLAN_CONCURRENT_BINS must be plan=number pairs .*"gold=3"/);
    expect(() => loadConfig({ ...valid, PLAN_CONCURRENT_BINS: 'free=0' })).toThrow(/PLAN_CONCURRENT_BINS/);
  });
});
