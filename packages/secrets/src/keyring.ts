import { createHash, randomBytes } from 'node:crypto';

/** One AES-256 key and the id stored beside every ciphertext it made. */
export interface SecretsKey {
  id: string;
  key: Buffer;
}

/** The key new secrets are sealed with, and the one a rotation is moving away from. */
export interface Keyring {
  current: SecretsKey;
  previous?: SecretsKey;
}

export const KEY_BYTES = 32;

/**
 * A key from its base64 text (standard or URL alphabet). The id is derived from the key, so an
 * operator cannot pair a key with the wrong id, and it reveals nothing usable about the key.
 */
export function parseSecretsKey(text: string): SecretsKey {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(text.trim())) {
    throw new Error(`must be ${KEY_BYTES} bytes in base64 (e.g. \`openssl rand -base64 32\`)`);
  }
  return { id: createHash('sha256').update('ap-secrets-key-id').update(key).digest('hex').slice(0, 12), key };
}

/** A new random key, in the base64 form SECRETS_KEY takes. */
export function generateSecretsKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** The keyring from SECRETS_KEY and, during a rotation, SECRETS_KEY_PREVIOUS. */
export function keyringFrom(current: string, previous?: string): Keyring {
  const ring: Keyring = { current: parseSecretsKey(current) };
  if (previous) ring.previous = parseSecretsKey(previous);
  return ring;
}
