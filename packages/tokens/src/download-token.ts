// Signed download tokens (docs/product-rules.md#expiry-quotas): HMAC-SHA256 over the ZIP id and an
// expiry equal to the job's `expires_at`, checked in constant time.
//
// Format: `<payload>.<signature>`, both base64url without padding.
//   payload   = base64url(UTF-8 "<zipId>.<expiresAt in ms since the epoch, base 36>")
//   signature = base64url(HMAC-SHA256(secret, "ap-download-v1." + <payload as sent>))
// The MAC covers the payload text exactly as sent, so any change to either part (including a
// non-canonical base64url spelling of the same bytes) fails verification. The domain prefix
// keeps these MACs from ever being valid for another use of the same secret. The expiry keeps
// millisecond precision so it equals `expires_at` exactly. A typical token is about 105
// characters, all URL-safe ([A-Za-z0-9_.-]).

import { createHmac, timingSafeEqual } from 'node:crypto';

const DOMAIN = 'ap-download-v1.';
/** Longer inputs are refused before any hashing (a real token is ~105 characters). */
export const MAX_DOWNLOAD_TOKEN_LENGTH = 512;
const ZIP_ID = /^[A-Za-z0-9_-]{1,128}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const SIGNATURE_LENGTH = 43; // 32 bytes in unpadded base64url

export type DownloadTokenSecret = string | Uint8Array;

export interface DownloadTokenClaims {
  zipId: string;
  expiresAt: Date;
}

export type DownloadTokenVerdict =
  | { ok: true; zipId: string; expiresAt: Date }
  | { ok: false; code: 'INVALID_TOKEN' | 'EXPIRED_TOKEN' };

function secretBytes(secret: DownloadTokenSecret): Buffer {
  return typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret);
}

function mac(payload: string, secret: Buffer): string {
  return createHmac('sha256', secret).update(DOMAIN + payload, 'utf8').digest('base64url');
}

/** A download token for one ZIP, valid until `expiresAt`. Throws on invalid arguments. */
export function signDownloadToken(claims: DownloadTokenClaims, secret: DownloadTokenSecret): string {
  if (!ZIP_ID.test(claims.zipId)) throw new TypeError('zipId must be 1-128 characters of [A-Za-z0-9_-]');
  const expiresAt = claims.expiresAt.getTime();
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) throw new TypeError('expiresAt must be a valid date after 1970');
  const key = secretBytes(secret);
  if (key.length === 0) throw new TypeError('the download token secret must not be empty');
  const payload = Buffer.from(`${claims.zipId}.${expiresAt.toString(36)}`, 'utf8').toString('base64url');
  return `${payload}.${mac(payload, key)}`;
}

const INVALID = { ok: false, code: 'INVALID_TOKEN' } as const;

/**
 * Checks a token: signature first (constant time), then the claims, then the expiry. Expired
 * at `now >= expiresAt`. Never throws: anything malformed is INVALID_TOKEN.
 */
/** Builds a ZIP's `download_url`: `<publicBaseUrl>/download/<token>`, valid until `expiresAt`. */
export function downloadUrlSigner(publicBaseUrl: string, secret: DownloadTokenSecret): (zipId: string, expiresAt: Date) => string {
  return (zipId, expiresAt) => `${publicBaseUrl}/download/${signDownloadToken({ zipId, expiresAt }, secret)}`;
}

export function verifyDownloadToken(token: unknown, secret: DownloadTokenSecret, now: Date = new Date()): DownloadTokenVerdict {
  try {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_DOWNLOAD_TOKEN_LENGTH) return INVALID;
    const parts = token.split('.');
    if (parts.length !== 2) return INVALID;
    const [payload, signature] = parts as [string, string];
    if (!BASE64URL.test(payload) || !BASE64URL.test(signature) || signature.length !== SIGNATURE_LENGTH) return INVALID;
    const key = secretBytes(secret);
    if (key.length === 0) return INVALID;
    const expected = Buffer.from(mac(payload, key), 'ascii');
    const given = Buffer.from(signature, 'ascii');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return INVALID;

    // Authentic from here on; still parse defensively.
    const text = Buffer.from(payload, 'base64url').toString('utf8');
    const dot = text.lastIndexOf('.');
    if (dot <= 0) return INVALID;
    const zipId = text.slice(0, dot);
    const expiryText = text.slice(dot + 1);
    if (!ZIP_ID.test(zipId) || !/^[0-9a-z]{1,12}$/.test(expiryText)) return INVALID;
    const expiresAtMs = parseInt(expiryText, 36);
    if (!Number.isSafeInteger(expiresAtMs)) return INVALID;
    const nowMs = now.getTime();
    if (Number.isNaN(nowMs) || nowMs >= expiresAtMs) return { ok: false, code: 'EXPIRED_TOKEN' };
    return { ok: true, zipId, expiresAt: new Date(expiresAtMs) };
  } catch {
    return INVALID;
  }
}
