import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { MAX_DOWNLOAD_TOKEN_LENGTH, signDownloadToken, verifyDownloadToken } from './download-token';

const SECRET = 'k'.repeat(32) + '-download-secret';
const ZIP = 'zip_0123456789abcdef0123456789abcdef';
const EXPIRES = new Date('2030-06-01T12:34:56.789Z');
const BEFORE = new Date(EXPIRES.getTime() - 1);

const token = signDownloadToken({ zipId: ZIP, expiresAt: EXPIRES }, SECRET);
const [payload, signature] = token.split('.') as [string, string];

/** Replaces the character at `i` with another base64url character. */
function flip(s: string, i: number): string {
  const c = s[i]!;
  return s.slice(0, i) + (c === 'A' ? 'B' : 'A') + s.slice(i + 1);
}

const INVALID = { ok: false, code: 'INVALID_TOKEN' };

describe('signDownloadToken / verifyDownloadToken', () => {
  it('round-trips the ZIP id and the exact expiry (milliseconds)', () => {
    expect(verifyDownloadToken(token, SECRET, BEFORE)).toEqual({ ok: true, zipId: ZIP, expiresAt: EXPIRES });
    const other = signDownloadToken({ zipId: 'zip_x', expiresAt: new Date(1) }, SECRET);
    expect(verifyDownloadToken(other, SECRET, new Date(0))).toEqual({ ok: true, zipId: 'zip_x', expiresAt: new Date(1) });
  });

  it('is compact and URL-safe, and deterministic', () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(token.length).toBeLessThanOrEqual(110);
    expect(encodeURIComponent(token)).toBe(token);
    expect(signDownloadToken({ zipId: ZIP, expiresAt: EXPIRES }, SECRET)).toBe(token);
  });

  it('signs the payload with HMAC-SHA256 under the secret (domain-separated)', () => {
    const expected = createHmac('sha256', SECRET).update(`ap-download-v1.${payload}`).digest('base64url');
    expect(signature).toBe(expected);
    expect(Buffer.from(payload, 'base64url').toString('utf8')).toBe(`${ZIP}.${EXPIRES.getTime().toString(36)}`);
  });

  it('expires exactly at expiresAt', () => {
    expect(verifyDownloadToken(token, SECRET, new Date(EXPIRES.getTime() - 1)).ok).toBe(true);
    expect(verifyDownloadToken(token, SECRET, EXPIRES)).toEqual({ ok: false, code: 'EXPIRED_TOKEN' });
    expect(verifyDownloadToken(token, SECRET, new Date(EXPIRES.getTime() + 1))).toEqual({ ok: false, code: 'EXPIRED_TOKEN' });
  });

  it('rejects a token signed with another secret', () => {
    expect(verifyDownloadToken(token, 'another-secret-of-enough-length!', BEFORE)).toEqual(INVALID);
    const foreign = signDownloadToken({ zipId: ZIP, expiresAt: EXPIRES }, 'x'.repeat(40));
    expect(verifyDownloadToken(foreign, SECRET, BEFORE)).toEqual(INVALID);
  });

  it('rejects every single-character change of the payload and of the signature', () => {
    for (let i = 0; i < payload.length; i++) {
      expect({ i, verdict: verifyDownloadToken(`${flip(payload, i)}.${signature}`, SECRET, BEFORE) }).toEqual({ i, verdict: INVALID });
    }
    for (let i = 0; i < signature.length; i++) {
      expect({ i, verdict: verifyDownloadToken(`${payload}.${flip(signature, i)}`, SECRET, BEFORE) }).toEqual({ i, verdict: INVALID });
    }
  });

  it('rejects a non-canonical spelling of the same signature bytes', () => {
    // The last of 43 characters carries 4 bits and 2 padding bits: changing only the padding
    // bits decodes to the same bytes, and must still fail.
    const last = signature[42]!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twin = alphabet[alphabet.indexOf(last) ^ 1]!;
    const altered = `${payload}.${signature.slice(0, 42)}${twin}`;
    expect(Buffer.from(altered.split('.')[1]!, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
    expect(verifyDownloadToken(altered, SECRET, BEFORE)).toEqual(INVALID);
  });

  it('an extended expiry cannot be forged: a re-encoded payload needs a new signature', () => {
    const later = Buffer.from(`${ZIP}.${(EXPIRES.getTime() + 86_400_000).toString(36)}`).toString('base64url');
    expect(verifyDownloadToken(`${later}.${signature}`, SECRET, BEFORE)).toEqual(INVALID);
    // Checked before the expiry is trusted: a forged payload is INVALID even when "expired".
    expect(verifyDownloadToken(`${later}.${signature}`, SECRET, new Date(EXPIRES.getTime() + 10 * 86_400_000))).toEqual(INVALID);
    const otherZip = Buffer.from(`zip_other.${EXPIRES.getTime().toString(36)}`).toString('base64url');
    expect(verifyDownloadToken(`${otherZip}.${signature}`, SECRET, BEFORE)).toEqual(INVALID);
  });

  it('the e2e tampering cases: flipped character, appended character, swapped parts, garbage', () => {
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    for (const bad of [flipped, 'garbage', `${token}x`, token.split('.').reverse().join('.')]) {
      expect(verifyDownloadToken(bad, SECRET, BEFORE)).toEqual(INVALID);
    }
  });

  it('never throws on malformed input of any shape', () => {
    const inputs: unknown[] = [
      '',
      '.',
      '..',
      'a.b.c',
      `${token}.${signature}`,
      `.${signature}`,
      `${payload}.`,
      `${payload}.${signature}=`,
      `${payload}=.${signature}`,
      `${payload}.${signature.slice(0, 42)}`,
      `${payload}.${signature}A`,
      'a'.repeat(MAX_DOWNLOAD_TOKEN_LENGTH + 1),
      `${'a'.repeat(1_000_000)}.${signature}`,
      '%%%.%%%',
      'zip_1.abc',
      '\u0000.\u0000',
      '😀.😀',
      token.replace('.', '%2E'),
      null,
      undefined,
      12345,
      {},
      [token],
    ];
    for (const input of inputs) {
      expect(() => verifyDownloadToken(input, SECRET, BEFORE)).not.toThrow();
      expect(verifyDownloadToken(input, SECRET, BEFORE)).toEqual(INVALID);
    }
  });

  it('rejects authentic payloads that do not hold a ZIP id and an expiry', () => {
    // Signed with the real secret but malformed inside: still INVALID_TOKEN, never a crash.
    const sign = (text: string) => {
      const p = Buffer.from(text, 'utf8').toString('base64url');
      return `${p}.${createHmac('sha256', SECRET).update(`ap-download-v1.${p}`).digest('base64url')}`;
    };
    expect(verifyDownloadToken(sign(`${ZIP}.${EXPIRES.getTime().toString(36)}`), SECRET, BEFORE).ok).toBe(true);
    for (const text of ['', 'zip_1', '.abc', 'zip_1.', 'zip 1.abc', 'zip_1.ABC', 'zip_1.zzzzzzzzzzzzz', `zip/1.${EXPIRES.getTime().toString(36)}`]) {
      expect({ text, verdict: verifyDownloadToken(sign(text), SECRET, BEFORE) }).toEqual({ text, verdict: INVALID });
    }
  });

  it('accepts a Uint8Array secret equal to the string secret', () => {
    expect(verifyDownloadToken(token, new TextEncoder().encode(SECRET), BEFORE).ok).toBe(true);
    expect(verifyDownloadToken(token, new Uint8Array(), BEFORE)).toEqual(INVALID);
  });

  it('refuses to sign with bad arguments', () => {
    expect(() => signDownloadToken({ zipId: ZIP, expiresAt: EXPIRES }, '')).toThrow(TypeError);
    expect(() => signDownloadToken({ zipId: 'zip.1', expiresAt: EXPIRES }, SECRET)).toThrow(TypeError);
    expect(() => signDownloadToken({ zipId: '', expiresAt: EXPIRES }, SECRET)).toThrow(TypeError);
    expect(() => signDownloadToken({ zipId: ZIP, expiresAt: new Date(Number.NaN) }, SECRET)).toThrow(TypeError);
  });
});
