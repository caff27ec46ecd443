// What the origin benches run side by side: curl fetching the URLs into /dev/null (the
// baseline) and the packer's archive writer over the same URLs into a null sink.
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { writeArchive } from '@ap/archive';
import type { FetchAhead, FetchAheadOptions, Fetcher } from '@ap/fetch';
import { newZipOutput } from '@ap/zip';
import { ms } from './env';

/**
 * curl over `urls` into /dev/null: `parallel` at most that many at once (`--parallel
 * --parallel-immediate`), else one after another; `args` go before the URL list. The ms it took.
 */
export async function curlToNull(urls: string[], { parallel, args = [] }: { parallel: number | null; args?: string[] }): Promise<number> {
  const config = `/tmp/ap-bench-curl-${process.pid}-${Date.now()}.curl`;
  writeFileSync(config, urls.map((u) => `url = "${u}"\noutput = "/dev/null"\n`).join(''));
  const t0 = process.hrtime.bigint();
  try {
    await promisify(execFile)('curl', ['-sS', '--no-progress-meter', '--fail', ...args, ...(parallel ? ['--parallel', '--parallel-immediate', '--parallel-max', String(parallel)] : []), '-K', config]);
  } finally {
    rmSync(config, { force: true });
  }
  return ms(t0);
}

/**
 * The packer's archive writer over `urls` (names and sizes unknown, as for a single ZIP) into a
 * null sink: the ms it took, the ZIP's bytes, and the most the fetch-ahead held at once.
 */
export async function writeArchiveToNull(urls: string[], fetcher: Fetcher, fetchAhead: FetchAheadOptions): Promise<{ writerMs: number; zipBytes: number; peakBuffered: number }> {
  let ahead: FetchAhead<unknown> | null = null;
  const zip = newZipOutput(null);
  let zipBytes = 0;
  const drained = pipeline(zip.outputStream, new Writable({ write: (chunk: Buffer, _e, cb) => ((zipBytes += chunk.length), cb()) }));
  const t0 = process.hrtime.bigint();
  await writeArchive(
    zip,
    urls.map((url, position) => ({ position, url, filename: null, size: null, entryName: null })),
    {
      fetcher,
      mtime: new Date(),
      failOnUrlError: true,
      archiveLimit: Infinity,
      signal: new AbortController().signal,
      onBrokenBody: async () => undefined,
      fetchAhead,
      onFetchAhead: (a) => (ahead = a as FetchAhead<unknown>),
    },
  );
  zip.end();
  await drained;
  return { writerMs: ms(t0), zipBytes, peakBuffered: (ahead as FetchAhead<unknown> | null)?.peakBufferedBytes ?? 0 };
}
