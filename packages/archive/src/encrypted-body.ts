import type { Readable } from 'node:stream';
import { FetchError } from '@ap/fetch';
import type { AesCtr, EntryMac } from '@ap/zip';

/**
 * Body bytes [from, to) of an encrypted entry, as ciphertext. The MAC, when tracked, covers
 * [0, mac.at) and catches up once the slice passes a checkpoint ahead of its start; where
 * reading stops (every byte read was handed to the response) `onMac` gets it and how far it
 * reached: the body's end (learned) or a checkpoint to keep.
 */
export async function* encryptedBody(
  stream: Readable,
  from: number,
  to: number,
  cipher: AesCtr,
  mac: { at: number; mac: EntryMac } | null,
  onMac: (mac: EntryMac, hashed: number) => void,
): AsyncGenerator<Buffer> {
  let at = from;
  let hashed = mac?.at ?? -1;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (chunk.length > to - at) throw new FetchError('length', 'file is longer than probed', { retryable: false });
      const ciphertext = cipher.xor(chunk, at);
      const end = at + chunk.length;
      if (mac && hashed >= at && hashed < end) {
        mac.mac.update(hashed === at ? ciphertext : ciphertext.subarray(hashed - at));
        hashed = end;
      }
      at = end;
      yield ciphertext;
    }
    if (at !== to) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
  } finally {
    if (mac && hashed > mac.at) onMac(mac.mac, hashed);
  }
}
