// The bytes one packer writes for a bin's files (the engine's writeArchive into yazl): what a
// ZIP packed in segments must equal (docs/segments.md#why-the-bytes-are-the-one-packer-bytes).
import { PassThrough } from 'node:stream';
import { writeArchive, type BinFile } from '@ap/archive';
import type { Fetcher } from '@ap/fetch';
import { newZipOutput } from '@ap/zip';

export async function onePackerZip(fetcher: Fetcher, files: BinFile[], mtime: Date): Promise<Buffer> {
  const zipfile = newZipOutput(null);
  const out: Buffer[] = [];
  const sink = new PassThrough();
  (zipfile.outputStream as unknown as NodeJS.ReadableStream).pipe(sink);
  sink.on('data', (c: Buffer) => out.push(c));
  const ended = new Promise((r) => sink.on('end', r));
  await writeArchive(zipfile, files, { fetcher, mtime, failOnUrlError: true, archiveLimit: Infinity, signal: new AbortController().signal, onBrokenBody: async () => undefined });
  zipfile.end();
  await ended;
  return Buffer.concat(out);
}
