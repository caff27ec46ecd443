// API keys (docs/product-rules.md#accounts-plans-sessions): the plain value is `azk_` + 32 random
// bytes in base64url (43 characters), shown once; only its SHA-256 is stored.

import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'azk_';
/** `azk_` + 43 base64url characters. */
export const API_KEY_PATTERN = /^azk_[A-Za-z0-9_-]{43}$/;

/** A new plain API key: `azk_` + 32 random bytes, base64url. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 of the plain key's UTF-8 bytes: the value stored and looked up. */
export function hashApiKey(plain: string): Buffer<ArrayBuffer> {
  return createHash('sha256').update(plain, 'utf8').digest();
}

/** Whether a value has the shape of a key this service issues (a cheap pre-check, not a lookup). */
export function looksLikeApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}
