// Webhook signatures (docs/webhooks.md#webhooks):
//   X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=<old secret's>]
// Pure: no I/O; the receiver-side check is the one docs/webhooks.md shows.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { WEBHOOK_SECRET_PREFIX } from '@ap/contract';

/** `whsec_` + 32 random bytes, base64url. */
export function newWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

export function signPayload(secret: string, timestamp: number, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The header value: one `v1` per secret, in the order given (the new secret first). */
export function signatureHeader(secrets: readonly string[], timestamp: number, body: string | Buffer): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${signPayload(s, timestamp, body)}`)].join(',');
}

export interface ParsedSignature {
  timestamp: number;
  signatures: string[];
}

export function parseSignatureHeader(header: string): ParsedSignature | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return null;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') timestamp = /^\d{1,12}$/.test(value) ? Number(value) : null;
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

/**
 * A receiver's check: some `v1` matches the secret, and `t` is within `toleranceSeconds` of
 * `now` (a captured request replayed later fails).
 */
export function verifySignature(header: string, secret: string, body: string | Buffer, options: { now?: Date; toleranceSeconds?: number } = {}): boolean {
  const parsed = parseSignatureHeader(header);
  if (!parsed) return false;
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - parsed.timestamp) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(signPayload(secret, parsed.timestamp, body), 'hex');
  return parsed.signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
}
