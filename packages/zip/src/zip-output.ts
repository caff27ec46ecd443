import type yazl from 'yazl';

/** What the packers write an archive into: yazl's ZipFile, or the AES writer (what both have). */
export interface ZipOutput {
  outputStream: NodeJS.ReadableStream;
  addReadStreamLazy(name: string, options: Partial<yazl.ReadStreamOptions>, open: (cb: (err: unknown, stream: NodeJS.ReadableStream) => void) => void): void;
  end(): void;
}
