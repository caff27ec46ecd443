import { describe, expect, it } from '@jest/globals';
import { generateSecretsKey, keyringFrom, parseSecretsKey } from './keyring';
import { openSecret, resealSecret, sealSecret, sealedKeyId, SecretUnreadableError } from './seal';

const keyA = generateSecretsKey();
const keyB = generateSecretsKey();
const PLACE = 'sources.secret_access_key:6f1c';

describe('secrets at rest', () => {
  it('seals to text that holds neither the plaintext nor the key, and opens it again', () => {
    const ring = keyringFrom(keyA);
    const sealed = sealSecret(ring, 'wJalrXUtnFEMI/K7MDENG', PLACE);
    expect(sealed).not.toContain('wJalrXUtnFEMI');
    expect(sealed).not.toContain(keyA);
    expect(sealedKeyId(sealed)).toBe(ring.current.id);
    expect(openSecret(ring, sealed, PLACE)).toBe('wJalrXUtnFEMI/K7MDENG');
    // A fresh IV each time: equal secrets do not show as equal columns.
    expect(sealSecret(ring, 'same', PLACE)).not.toBe(sealSecret(ring, 'same', PLACE));
  });

  it('refuses a value moved to another place, tampered with, or sealed under an unknown key', () => {
    const ring = keyringFrom(keyA);
    const sealed = sealSecret(ring, 'token', PLACE);
    expect(() => openSecret(ring, sealed, 'sources.secret_access_key:other')).toThrow(SecretUnreadableError);
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0]! ^= 1;
    expect(() => openSecret(ring, [...parts.slice(0, 3), body.toString('base64url')].join('.'), PLACE)).toThrow(/authentication failed/);
    expect(() => openSecret(keyringFrom(keyB), sealed, PLACE)).toThrow(/neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS/);
    expect(() => openSecret(ring, 'plain text', PLACE)).toThrow(/not a sealed value/);
  });

  it('rotates: the previous key still opens, reseal moves a value to the current key, then the old key can go', () => {
    const old = keyringFrom(keyA);
    const sealed = sealSecret(old, 'rotate me', PLACE);
    const during = keyringFrom(keyB, keyA);
    expect(openSecret(during, sealed, PLACE)).toBe('rotate me');
    const resealed = resealSecret(during, sealed, PLACE)!;
    expect(sealedKeyId(resealed)).toBe(during.current.id);
    expect(resealSecret(during, resealed, PLACE)).toBeUndefined();
    expect(openSecret(keyringFrom(keyB), resealed, PLACE)).toBe('rotate me');
    expect(() => openSecret(keyringFrom(keyB), sealed, PLACE)).toThrow(SecretUnreadableError);
  });

  it('takes only 32-byte base64 keys, and derives a stable id from the key', () => {
    expect(() => parseSecretsKey('c2hvcnQ=')).toThrow(/32 bytes in base64/);
    expect(() => parseSecretsKey('not base64 at all, not base64 at all!!!!!!!')).toThrow(/32 bytes/);
    expect(parseSecretsKey(keyA).id).toBe(parseSecretsKey(keyA).id);
    expect(parseSecretsKey(keyA).id).not.toBe(parseSecretsKey(keyB).id);
    expect(parseSecretsKey(Buffer.from(keyA, 'base64').toString('base64url')).id).toBe(parseSecretsKey(keyA).id);
  });
});
