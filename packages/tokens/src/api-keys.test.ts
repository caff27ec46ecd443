import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { API_KEY_PATTERN, generateApiKey, hashApiKey, looksLikeApiKey } from './api-keys';

describe('API keys', () => {
  it('are azk_ + 32 random bytes in base64url', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^azk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    expect(Buffer.from(key.slice(4), 'base64url').toString('base64url')).toBe(key.slice(4));
  });

  it('are unique', () => {
    const keys = new Set(Array.from({ length: 1_000 }, generateApiKey));
    expect(keys.size).toBe(1_000);
  });

  it('hash to the SHA-256 of the whole plain value', () => {
    const key = 'azk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    const hash = hashApiKey(key);
    expect(Buffer.isBuffer(hash)).toBe(true);
    expect(hash).toHaveLength(32);
    expect(hash.toString('hex')).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashApiKey('abc').toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey(key).equals(hashApiKey(`${key} `))).toBe(false);
  });

  it('can be recognised by shape', () => {
    expect(looksLikeApiKey(generateApiKey())).toBe(true);
    expect(looksLikeApiKey('azk_short')).toBe(false);
    expect(looksLikeApiKey(`xyz_${'A'.repeat(43)}`)).toBe(false);
    expect(API_KEY_PATTERN.test(`azk_${'A'.repeat(43)}\n`)).toBe(false);
  });
});
