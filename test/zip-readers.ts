// Independent ZIP readers for tests: Info-ZIP's `unzip -t`, Python's zipfile, and yauzl.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import yauzl from 'yauzl';

const execFileAsync = promisify(execFile);

export interface ZipEntryDigest {
  name: string;
  size: number;
  sha256: string;
}

// z.read checks each entry's CRC (BadZipFile on a mismatch), as testzip would in a pass of its own.
const PY_LIST = `
import hashlib, json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps([{"name": i.filename, "size": i.file_size, "sha256": hashlib.sha256(z.read(i)).hexdigest(), "flag_bits": i.flag_bits, "compress_type": i.compress_type} for i in z.infolist()]))
`;

/** Writes the archive to a temp file and checks it with all three readers; returns the entries. */
export async function readZip(bytes: Buffer): Promise<ZipEntryDigest[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-zip-'));
  const file = path.join(dir, 'a.zip');
  try {
    writeFileSync(file, bytes);
    // The three readers at once: unzip and Python in their own processes, yauzl in this one.
    const [unzip, python, yauzlRead] = await Promise.allSettled([execFileAsync('unzip', ['-tqq', file]), execFileAsync('python3', ['-c', PY_LIST, file], { encoding: 'utf8', maxBuffer: 1 << 28 }), readWithYauzl(bytes)]);
    for (const r of [unzip, python, yauzlRead]) if (r.status === 'rejected') throw r.reason;
    const py = JSON.parse((python as PromiseFulfilledResult<{ stdout: string }>).value.stdout) as Array<ZipEntryDigest & { flag_bits: number; compress_type: number }>;
    for (const e of py) {
      if (e.compress_type !== 0) throw new Error(`entry ${e.name} is compressed`);
      if (!(e.flag_bits & 0x800) && /[^\x00-\x7f]/.test(e.name)) throw new Error(`entry ${e.name} lacks the UTF-8 flag`);
    }
    const viaYauzl = (yauzlRead as PromiseFulfilledResult<ZipEntryDigest[]>).value;
    const simple = (list: ZipEntryDigest[]) => list.map(({ name, size, sha256 }) => ({ name, size, sha256 }));
    if (JSON.stringify(simple(py)) !== JSON.stringify(viaYauzl)) throw new Error('python zipfile and yauzl disagree');
    return viaYauzl;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function readWithYauzl(bytes: Buffer): Promise<ZipEntryDigest[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      const out: ZipEntryDigest[] = [];
      zip.on('error', reject);
      zip.on('end', () => resolve(out));
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          const hash = createHash('sha256');
          stream.on('data', (c: Buffer) => hash.update(c));
          stream.on('error', reject);
          stream.on('end', () => {
            out.push({ name: entry.fileName, size: entry.uncompressedSize, sha256: hash.digest('hex') });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
