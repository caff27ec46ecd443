// A body of unknown length headed for a tar: a tar header gives the size before the body, so
// such a body goes to a temporary file first and is read back from it (deleted once read).
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export type Spilled = { stream: Readable; size: number } | { tooLarge: true } | { error: unknown };

/** Writes the body to a temporary file (at most `maxBytes`); the stream it returns reads it back and deletes it. */
export async function spillBody(body: Readable, maxBytes: number, signal: AbortSignal): Promise<Spilled> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ap-spill-'));
  const file = path.join(dir, 'body');
  const remove = () => rm(dir, { recursive: true, force: true });
  let size = 0;
  let tooLarge = false;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > maxBytes) {
        tooLarge = true;
        return done(new Error('too large'));
      }
      done(null, chunk);
    },
  });
  try {
    await pipeline(body, count, createWriteStream(file), { signal });
  } catch (error) {
    await remove();
    body.destroy();
    return tooLarge ? { tooLarge: true } : { error };
  }
  const stream = createReadStream(file);
  stream.once('close', () => void remove());
  return { stream, size };
}
