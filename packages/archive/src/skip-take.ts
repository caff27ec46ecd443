import { Readable } from 'node:stream';

/** For an origin that ignored Range: drops `skip` bytes, then passes `take`. */
export function skipTake(stream: Readable, skip: number, take: number): Readable {
  return Readable.from(
    (async function* () {
      let pos = 0;
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          const a = Math.max(0, skip - pos);
          const b = Math.min(chunk.length, skip + take - pos);
          pos += chunk.length;
          if (b > a) yield chunk.subarray(a, b);
          if (pos >= skip + take) break;
        }
      } finally {
        stream.destroy();
      }
    })(),
    { objectMode: false },
  );
}
