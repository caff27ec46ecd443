// What a bin keeps in memory of the files it has written: nothing but their central records.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createFetcher, type Fetcher } from '@ap/fetch';
import { newZipOutput } from '@ap/zip';
import { writeArchive } from './archive';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let server: http.Server;
let base = '';

beforeAll(async () => {
  // Every path is 4 KiB.
  server = http.createServer((_req, res) => res.writeHead(200, { 'content-length': '4096' }).end(Buffer.alloc(4096, 7)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

it('lets go of each body (its stream, request and response) once it is in the archive, not when the archive ends', async () => {
  const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 60_000, retries: 0, userAgent: 'ap-packer-test' });
  // Each body opened is counted, and counted again once the GC collected it.
  let opened = 0;
  let collected = 0;
  const registry = new FinalizationRegistry(() => collected++);
  const watching: Fetcher = Object.create(fetcher) as Fetcher;
  watching.openBody = async (...args) => {
    const body = await fetcher.openBody(...args);
    registry.register(body.stream, null);
    opened++;
    return body;
  };
  const zip = newZipOutput(null);
  const drained = pipeline(zip.outputStream, new Writable({ write: (_c, _e, cb) => cb() }));
  const files = Array.from({ length: 200 }, (_, position) => ({ position, url: `${base}/f${position}`, filename: null, size: null, entryName: null }));
  const { packaged } = await writeArchive(zip, files, {
    fetcher: watching,
    mtime: new Date(),
    failOnUrlError: true,
    archiveLimit: Infinity,
    signal: new AbortController().signal,
    onBrokenBody: async () => undefined,
  });
  expect(packaged).toHaveLength(200);
  // The archive is not ended yet: the writer still holds every entry's record for its central directory.
  // Collected bodies are told to the registry in a later task, which a loaded machine ran after
  // one 10 ms wait (0 of 200 in a CI run): collections until they are told, or 2 s. A body still
  // held is never collected, however many.
  for (let i = 0; i < 100 && collected < 198; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(opened).toBe(200);
  expect(collected).toBeGreaterThanOrEqual(198);
  zip.end();
  await drained;
  fetcher.close();
});
