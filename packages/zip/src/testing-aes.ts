// An AE-2 reader for tests, written apart from aes.ts and format.ts: it walks the central
// directory, checks each entry's records, verifier and MAC, and decrypts with a counter it
// builds itself (a 128-bit little-endian BigInt per block, encrypted with AES-256-ECB). An
// entry whose 0x9901 field says method 8 is inflated after decryption.
import { createCipheriv, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';

export interface AesEntryRead {
  name: string;
  data: Buffer;
  /** The method under the encryption: 0 stored, 8 deflated. */
  method: number;
}

export class WrongPassword extends Error {}

function counterBlock(n: bigint): Buffer {
  const block = Buffer.alloc(16);
  for (let i = 0; i < 16; i++) block[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  return block;
}

function decrypt(key: Buffer, ciphertext: Buffer): Buffer {
  const blocks = Math.ceil(ciphertext.length / 16);
  const counters = Buffer.concat(Array.from({ length: blocks }, (_, i) => counterBlock(BigInt(i + 1))));
  const stream = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false).update(counters);
  const out = Buffer.alloc(ciphertext.length);
  for (let i = 0; i < ciphertext.length; i++) out[i] = ciphertext[i]! ^ stream[i]!;
  return out;
}

/** Every entry of an AE-2 ZIP, decrypted; throws WrongPassword on a verifier mismatch, Error on a bad MAC or record. */
export function readAesZip(zip: Buffer, password: string): AesEntryRead[] {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('no end record');
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const out: AesEntryRead[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`central record ${i}: bad signature`);
    const flags = zip.readUInt16LE(at + 8);
    const method = zip.readUInt16LE(at + 10);
    const crc = zip.readUInt32LE(at + 16);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const offset = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    if (!(flags & 1) || method !== 99 || crc !== 0) throw new Error(`${name}: not an AE-2 entry (flags ${flags}, method ${method}, crc ${crc})`);
    let aes: Buffer | null = null;
    for (let x = at + 46 + nameLength; x < at + 46 + nameLength + extraLength; ) {
      const id = zip.readUInt16LE(x);
      const length = zip.readUInt16LE(x + 2);
      if (id === 0x9901) aes = zip.subarray(x + 4, x + 4 + length);
      x += 4 + length;
    }
    if (!aes || aes.length !== 7 || aes.readUInt16LE(0) !== 2 || aes.toString('latin1', 2, 4) !== 'AE' || aes[4] !== 3 || ![0, 8].includes(aes.readUInt16LE(5))) {
      throw new Error(`${name}: bad 0x9901 field`);
    }
    const inner = aes.readUInt16LE(5);
    if (inner === 0 && compressed !== size + 28) throw new Error(`${name}: compressed size ${compressed} is not ${size} + 28`);
    const length = compressed - 28;
    // The local header says the same (method, flags, the 0x9901 field).
    if (zip.readUInt32LE(offset) !== 0x04034b50 || zip.readUInt16LE(offset + 8) !== 99 || !(zip.readUInt16LE(offset + 6) & 1)) throw new Error(`${name}: bad local header`);
    const localExtra = zip.subarray(offset + 30 + zip.readUInt16LE(offset + 26), offset + 30 + zip.readUInt16LE(offset + 26) + zip.readUInt16LE(offset + 28));
    let localAes: Buffer | null = null;
    for (let x = 0; x < localExtra.length; x += 4 + localExtra.readUInt16LE(x + 2)) {
      if (localExtra.readUInt16LE(x) === 0x9901) localAes = localExtra.subarray(x + 4, x + 4 + localExtra.readUInt16LE(x + 2));
    }
    if (!localAes?.equals(aes)) throw new Error(`${name}: local 0x9901 field differs`);
    const dataAt = offset + 30 + zip.readUInt16LE(offset + 26) + zip.readUInt16LE(offset + 28);
    const salt = zip.subarray(dataAt, dataAt + 16);
    const verifier = zip.subarray(dataAt + 16, dataAt + 18);
    const ciphertext = zip.subarray(dataAt + 18, dataAt + 18 + length);
    const mac = zip.subarray(dataAt + 18 + length, dataAt + 28 + length);
    const derived = pbkdf2Sync(password, salt, 1000, 66, 'sha1');
    if (!timingSafeEqual(derived.subarray(64, 66), verifier)) throw new WrongPassword(`${name}: password verifier differs`);
    const expected = createHmac('sha1', derived.subarray(32, 64)).update(ciphertext).digest().subarray(0, 10);
    if (!expected.equals(mac)) throw new Error(`${name}: authentication code differs`);
    // The data descriptor follows: CRC 0 and the sizes.
    const descriptor = dataAt + 28 + length;
    if (zip.readUInt32LE(descriptor) !== 0x08074b50 || zip.readUInt32LE(descriptor + 4) !== 0 || zip.readUInt32LE(descriptor + 8) !== compressed || zip.readUInt32LE(descriptor + 12) !== size) {
      throw new Error(`${name}: bad data descriptor`);
    }
    const plain = decrypt(derived.subarray(0, 32), ciphertext);
    const data = inner === 8 ? inflateRawSync(plain) : plain;
    if (data.length !== size) throw new Error(`${name}: ${data.length} bytes, the records say ${size}`);
    out.push({ name, data, method: inner });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return out;
}
