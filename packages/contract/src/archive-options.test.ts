import { describe, expect, it } from '@jest/globals';
import type { z } from 'zod';
import { formatZodError, jobCreateSchema } from './schemas';

const files = [{ url: 'https://example.com/a.txt' }];
const PASSWORD = 'a-secret-password';

function problem(input: unknown): string {
  const result = (jobCreateSchema as z.ZodType).safeParse(input);
  if (result.success) throw new Error(`expected a failure, got ${JSON.stringify(result.data)}`);
  return formatZodError(result.error);
}

describe('archive options', () => {
  it('accepts deflate with a level for stored jobs, and AES-256 in both modes', () => {
    expect(jobCreateSchema.parse({ files, compression: 'deflate', compression_level: 1 })).toMatchObject({ compression: 'deflate', compression_level: 1 });
    expect(jobCreateSchema.parse({ files, compression: 'deflate' })).toMatchObject({ compression: 'deflate' });
    for (const mode of ['stored', 'stream']) {
      expect(jobCreateSchema.parse({ files, mode, encryption: { method: 'aes-256', password: PASSWORD } }).encryption).toEqual({ method: 'aes-256', password: PASSWORD });
    }
    expect(jobCreateSchema.parse({ files, encryption: { method: 'aes-256', password: '\u{1F511}'.repeat(128) } }).encryption).toBeDefined();
    const both = jobCreateSchema.parse({ files, compression: 'deflate', compression_level: 9, encryption: { method: 'aes-256', password: PASSWORD } });
    expect(both).toMatchObject({ compression: 'deflate', compression_level: 9, encryption: { method: 'aes-256' } });
  });

  it('refuses each bad combination naming the field, never repeating the password', () => {
    expect(problem({ files, mode: 'stream', compression: 'deflate' })).toMatch(/^compression: must be "store" in stream mode/);
    expect(problem({ files, compression: 'deflate', compression_level: 0 })).toMatch(/^compression_level: must be a whole number from 1 to 9/);
    expect(problem({ files, compression: 'deflate', compression_level: 10 })).toMatch(/^compression_level: must be a whole number from 1 to 9/);
    expect(problem({ files, compression: 'deflate', compression_level: 2.5 })).toMatch(/^compression_level:/);
    expect(problem({ files, compression_level: 6 })).toMatch(/^compression_level: is only for compression "deflate" or format "tar.gz"/);
    expect(problem({ files, compression: 'zstd' })).toMatch(/^compression: must be "store" or "deflate"/);
    expect(problem({ files, encryption: { method: 'zipcrypto', password: PASSWORD } })).toMatch(/^encryption\.method: must be "aes-256"/);
    expect(problem({ files, encryption: { password: PASSWORD } })).toMatch(/^encryption\.method: is required/);
    expect(problem({ files, encryption: { method: 'aes-256' } })).toMatch(/^encryption\.password: is required/);
    expect(problem({ files, encryption: { method: 'aes-256', password: PASSWORD, extra: 1 } })).toMatch(/encryption/);
    expect(problem({ files, encryption: 'aes-256' })).toMatch(/^encryption: must be an object/);
    const short = problem({ files, encryption: { method: 'aes-256', password: 'seven77' } });
    expect(short).toMatch(/^encryption\.password: must be 8 to 128 characters \(got 7\)/);
    expect(short).not.toContain('seven77');
    const long = 'x'.repeat(129);
    const tooLong = problem({ files, encryption: { method: 'aes-256', password: long } });
    expect(tooLong).toMatch(/^encryption\.password: must be 8 to 128 characters \(got 129\)/);
    expect(tooLong).not.toContain(long);
    // Deflate with AES-256 is for stored jobs, as deflate is.
    expect(problem({ files, mode: 'stream', compression: 'deflate', encryption: { method: 'aes-256', password: PASSWORD } })).toMatch(/^compression: must be "store" in stream mode/);
  });
});
