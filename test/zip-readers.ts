// Independent ZIP readers for tests: Info-ZIP's `unzip -t`, Python's zipfile, and yauzl.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yauzl from 'yauzl';

export interface ZipEntryDigest {
  name: string;
  size: number;
  sha256: string;
}

const PY_LIST = `
import hashlib, json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
bad = z.testzip()
if bad is not None:
    sys.exit("bad entry: " + bad)
print(json.dumps([{"name": i.filename, "size": i.file_size, "sha256": hashlib.sha256(z.read(i)).hexdigest(), "flag_bits": i.flag_bits, "compress_type": i.compress_type} for i in z.infolist()]))
`;

/** Writes the archive to a temp file and checks it with all three readers; returns the entries. */
export async function readZip(bytes: Buffer): Promise<ZipEntryDigest[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-zip-'));
  const file = path.join(dir, 'a.zip');
  try {
    writeFileSync(file, bytes);
    execFileSync('unzip', ['-tqq', file], { stdio: 'pipe' });
    const py = JSON.parse(execFileSync('python3', ['-c', PY_LIST, file], { encoding: 'utf8', maxBuffer: 1 << 28 })) as Array<ZipEntryDigest & { flag_bits: number; compress_type: number }>;
    for (const e of py) {
      if (e.compress_type !== 0) throw new Error(`entry ${e.name} is compressed`);
      if (!(e.flag_bits & 0x800) && /[^\x00-\x7f]/.test(e.name)) throw new Error(`entry ${e.name} lacks the UTF-8 flag`);
    }
    const viaYauzl = await readWithYauzl(bytes);
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
