// Embedded defaults for running the stack on one machine (`pnpm start`, `pnpm admin`).
// Production sets every variable explicitly; nothing here is used when a variable is set.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateSecretsKey } from '@ap/secrets';

export const DATA_DIR = path.resolve(process.env.DATA_DIR ?? '.data');
export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/archive_packager';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
/** Where `pnpm start` records what it chose (e.g. the embedded Postgres URL) for `pnpm admin`. */
export const RUNTIME_FILE = path.join(DATA_DIR, 'runtime.json');

/**
 * Development secrets are generated once and kept under .data/, so sessions and download
 * links survive restarts. They are never printed.
 */
export function devSecrets(): DevSecrets {
  const file = path.join(DATA_DIR, 'secrets.json');
  const kept: Partial<DevSecrets> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const secrets: DevSecrets = {
    DOWNLOAD_TOKEN_SECRET: kept.DOWNLOAD_TOKEN_SECRET ?? randomBytes(32).toString('base64url'),
    SESSION_SECRET: kept.SESSION_SECRET ?? randomBytes(32).toString('base64url'),
    // The development key of stored secrets (a .data/ made before it existed gains one).
    SECRETS_KEY: kept.SECRETS_KEY ?? generateSecretsKey(),
  };
  if (Object.keys(kept).length !== Object.keys(secrets).length) {
    mkdirSync(DATA_DIR, { recursive: true });
    writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
  }
  return secrets;
}

interface DevSecrets {
  DOWNLOAD_TOKEN_SECRET: string;
  SESSION_SECRET: string;
  SECRETS_KEY: string;
}

export interface RuntimeInfo {
  DATABASE_URL?: string;
}

export function readRuntimeInfo(): RuntimeInfo {
  try {
    return JSON.parse(readFileSync(RUNTIME_FILE, 'utf8')) as RuntimeInfo;
  } catch {
    return {};
  }
}

export function writeRuntimeInfo(info: RuntimeInfo): void {
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(RUNTIME_FILE, JSON.stringify(info));
}
