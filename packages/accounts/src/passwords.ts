// Password hashing off the event loop. bcrypt's native addon runs each hash in libuv's thread
// pool: a pure-JS hash on the API's only thread let a burst of logins stall every other
// request. The hash
// format is the same ($2a$/$2b$), so hashes written by bcryptjs stay valid.
import { availableParallelism } from 'node:os';
import bcrypt from 'bcrypt';

// docs/product-rules.md#accounts-plans-sessions allows argon2 or bcrypt; argon2's prebuilt binary crashes on this platform.
const BCRYPT_COST = 12;

/**
 * At most this many hashes at once: one core left to the event loop (on 2 cores a second hash
 * doubled GET /jobs latency during 20 concurrent logins: bench/login.ts), and at most 2 of
 * libuv's 4 pool threads, the rest free for what else uses them (DNS lookups of stream
 * downloads, file I/O). Logins beyond it wait their turn; the login throttle bounds how many.
 */
const HASHES_AT_ONCE = Math.max(1, Math.min(2, availableParallelism() - 1));

let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  if (running >= HASHES_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

export function hashPassword(password: string): Promise<string> {
  return limited(() => bcrypt.hash(password, BCRYPT_COST));
}

export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return limited(() => bcrypt.compare(password, hash));
}
