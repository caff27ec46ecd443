import type { Writable } from 'node:stream';
import { freeChunk } from '@ap/fetch';

/** Bytes a download's chunks are gathered into before the socket takes them (one writev). */
const WRITE_BATCH_BYTES = 256 * 1024;
/** How long a chunk waits for the rest of its batch, at most (a slow or stalled origin). */
export const WRITE_BATCH_MAX_MS = 5;

/**
 * Writes a stream download's chunks to its response in batches: corked until about
 * WRITE_BATCH_BYTES are in or the first of them has waited WRITE_BATCH_MAX_MS, then sent
 * together. Fewer, larger writes cost the API less CPU per byte than one write per socket
 * chunk (docs/engine.md#fetching-ahead). Once the socket has taken a batch, its chunks'
 * memory is freed (`freeChunk`): left to the GC, it starts a full collection for every 64 MiB
 * sent. Backpressure: after a full batch, `write` waits until the response has drained.
 */
export class BatchedWriter {
  private batched = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The batch's chunks; the last is written by `flush`, with the callback that frees them all. */
  private chunks: Buffer[] = [];

  constructor(
    private readonly res: Writable,
    /** Told the bytes of each batch as it goes out. */
    private readonly onFlush: (bytes: number) => void,
  ) {}

  async write(chunk: Buffer): Promise<void> {
    if (this.chunks.length === 0) {
      this.res.cork();
      this.timer = setTimeout(() => this.flush(), WRITE_BATCH_MAX_MS);
    } else {
      this.res.write(this.chunks.at(-1));
    }
    this.chunks.push(chunk);
    this.batched += chunk.length;
    if (this.batched < WRITE_BATCH_BYTES) return;
    this.flush();
    if (this.res.writableNeedDrain) await drained(this.res);
  }

  /** Sends what is batched now. */
  flush(): void {
    if (this.chunks.length === 0) return;
    clearTimeout(this.timer!);
    this.timer = null;
    const bytes = this.batched;
    const chunks = this.chunks;
    this.batched = 0;
    this.chunks = [];
    this.res.write(chunks.at(-1), () => chunks.forEach(freeChunk));
    this.res.uncork();
    this.onFlush(bytes);
  }
}

/** Resolves once `res` has drained, or closed. */
function drained(res: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}
