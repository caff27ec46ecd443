/** How an entry is added: its time, compression, and its body's length when known first. */
export interface EntryOptions {
  mtime?: Date;
  compress?: boolean;
  compressionLevel?: number;
  size?: number;
}

/** What the packers write an archive into (ZipWriter; benches put a stand-in here). */
export interface ZipOutput {
  outputStream: NodeJS.ReadableStream;
  addReadStreamLazy(name: string, options: EntryOptions, open: (cb: (err: unknown, stream: NodeJS.ReadableStream) => void) => void): void;
  end(): void;
}
