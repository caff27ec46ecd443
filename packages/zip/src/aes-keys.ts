// AE-2 keys (PBKDF2-HMAC-SHA1, 1000 iterations: about 1 ms of CPU each) derived on a worker
// pool of their own, fairly across users (key-pool.ts), and kept per ZIP entry in a bounded
// LRU, so a repeated or resumed download of an encrypted stream ZIP derives no key again
// (docs/archive-options.md#key-derivation).
import { createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { KeyDerivationPool } from './key-pool';

export interface AesKeys {
  aesKey: Buffer;
  macKey: Buffer;
  verifier: Buffer;
}

const PBKDF2_ITERATIONS = 1000;
/** 32 bytes of AES key, 32 of HMAC key, 2 of verifier. */
const DERIVED_BYTES = 66;
/** Keys kept: 66 bytes each plus their entry in the cache, about 20 MB at most. */
const KEPT_KEYS = 65_536;

/** Keys derived since the process started, by where: counted for tests and the bench. */
export const aesKeyDerivations = { offLoop: 0, onLoop: 0 };

function keysOf(derived: Buffer): AesKeys {
  return { aesKey: derived.subarray(0, 32), macKey: derived.subarray(32, 64), verifier: derived.subarray(64) };
}

/** The derived keys of this process, by password and salt (a salt is unique per job, ZIP and entry). */
export class AesKeyStore {
  private readonly kept: LRUCache<string, Buffer>;
  private readonly deriving = new Map<string, Promise<Buffer>>();
  /** Cache keys carry an HMAC of the password under this, never the password. */
  private readonly tagKey = randomBytes(32);

  constructor(
    max = KEPT_KEYS,
    private readonly pool = new KeyDerivationPool(),
  ) {
    this.kept = new LRUCache({ max });
  }

  /** The cache's name for one password (computed once per ZIP served). */
  passwordTag(password: string): string {
    return createHmac('sha256', this.tagKey).update(password, 'utf8').digest('base64url').slice(0, 22);
  }

  /** The keys if kept; else derived now, on the event loop (only where no caller can wait). */
  keysNow(tag: string, password: string, salt: Buffer): AesKeys {
    const id = `${tag}:${salt.toString('base64url')}`;
    let derived = this.kept.get(id);
    if (!derived) {
      aesKeyDerivations.onLoop++;
      derived = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, PBKDF2_ITERATIONS, DERIVED_BYTES, 'sha1');
      this.kept.set(id, derived);
    }
    return keysOf(derived);
  }

  /**
   * Makes sure the keys are kept, deriving them on the key pool in `owner`'s turn (a user:
   * users take turns); concurrent callers share one derivation.
   */
  async ready(tag: string, password: string, salt: Buffer, owner: string = tag): Promise<void> {
    const id = `${tag}:${salt.toString('base64url')}`;
    if (this.kept.has(id)) return;
    let derivation = this.deriving.get(id);
    if (!derivation) {
      aesKeyDerivations.offLoop++;
      derivation = this.pool.derive(owner, { password, salt, iterations: PBKDF2_ITERATIONS, bytes: DERIVED_BYTES }).finally(() => this.deriving.delete(id));
      this.deriving.set(id, derivation);
    }
    this.kept.set(id, await derivation);
  }
}

/** The process's key store: every ZIP served or written by this process shares it. */
export const processAesKeys = new AesKeyStore();
