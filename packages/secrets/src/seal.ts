// Secrets at rest: AES-256-GCM, a fresh 96-bit IV per seal, the key id beside the ciphertext,
// and the place the secret belongs to (table, column, row) as associated data, so a sealed
// value copied to another row or column does not open.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Keyring, SecretsKey } from './keyring';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Thrown when a sealed value cannot be opened: unknown key id, tampering, or another place. */
export class SecretUnreadableError extends Error {
  constructor(reason: string) {
    super(`stored secret cannot be read: ${reason}`);
    this.name = 'SecretUnreadableError';
  }
}

/** `v1.<key id>.<iv>.<ciphertext and tag>`, base64url parts: one text column holds it all. */
export function sealSecret(ring: Keyring, plaintext: string, place: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, iv);
  cipher.setAAD(Buffer.from(place, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return [VERSION, ring.current.id, iv.toString('base64url'), body.toString('base64url')].join('.');
}

/** The key id a sealed value names, or undefined when the text is not a sealed value. */
export function sealedKeyId(sealed: string): string | undefined {
  const parts = sealed.split('.');
  return parts.length === 4 && parts[0] === VERSION ? parts[1] : undefined;
}

function keyFor(ring: Keyring, id: string): SecretsKey {
  if (ring.current.id === id) return ring.current;
  if (ring.previous?.id === id) return ring.previous;
  throw new SecretUnreadableError(`it was sealed with key ${id}, which is neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS`);
}

export function openSecret(ring: Keyring, sealed: string, place: string): string {
  const id = sealedKeyId(sealed);
  if (id === undefined) throw new SecretUnreadableError('not a sealed value');
  const [, , ivText, bodyText] = sealed.split('.') as [string, string, string, string];
  const iv = Buffer.from(ivText, 'base64url');
  const body = Buffer.from(bodyText, 'base64url');
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SecretUnreadableError('truncated');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(ring, id).key, iv);
  decipher.setAAD(Buffer.from(place, 'utf8'));
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadableError('authentication failed (tampered, or sealed for another place)');
  }
}

/** The value sealed again under the current key, or undefined when it already is. */
export function resealSecret(ring: Keyring, sealed: string, place: string): string | undefined {
  if (sealedKeyId(sealed) === ring.current.id) return undefined;
  return sealSecret(ring, openSecret(ring, sealed, place), place);
}

/** Sealing and opening bound to one keyring: what services hold. */
export interface SecretBox {
  seal(plaintext: string, place: string): string;
  open(sealed: string, place: string): string;
  reseal(sealed: string, place: string): string | undefined;
  readonly currentKeyId: string;
}

export function secretBox(ring: Keyring): SecretBox {
  return {
    seal: (plaintext, place) => sealSecret(ring, plaintext, place),
    open: (sealed, place) => openSecret(ring, sealed, place),
    reseal: (sealed, place) => resealSecret(ring, sealed, place),
    currentKeyId: ring.current.id,
  };
}
