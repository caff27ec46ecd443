// Two independent readers of a ZIP on disk, each listing every entry's name and SHA-256:
// Python's zipfile and yauzl, or for WinZip AES ZIPs (which neither opens) 7-Zip and bsdtar.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import yauzl from 'yauzl';
import type { EntryDigest } from './invariants';

const run = promisify(execFile);

const PY = `
import hashlib, json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps([{"name": i.filename, "sha256": hashlib.sha256(z.read(i)).hexdigest()} for i in z.infolist()]))
`;

export async function readTwice(file: string, password?: string): Promise<Array<{ reader: string; entries: EntryDigest[] }>> {
  if (password) return Promise.all([extracted('7z', file, ['7z', 'x', '-y', `-p${password}`], '-o'), extracted('bsdtar', file, ['bsdtar', '-x', '--passphrase', password, '-f', file], '-C')]);
  const python = run('python3', ['-c', PY, file], { maxBuffer: 1 << 26 }).then(({ stdout }) => ({ reader: 'python zipfile', entries: JSON.parse(stdout) as EntryDigest[] }));
  return Promise.all([python, viaYauzl(file).then((entries) => ({ reader: 'yauzl', entries }))]);
}

/** Extracts with a command-line reader into a scratch folder and digests what it wrote. */
async function extracted(reader: string, file: string, command: string[], dirFlag: string): Promise<{ reader: string; entries: EntryDigest[] }> {
  const dir = mkdtempSync(path.join(path.dirname(file), `${reader}-`));
  try {
    const args = reader === '7z' ? [...command.slice(1), `${dirFlag}${dir}`, file] : [...command.slice(1), dirFlag, dir];
    await run(command[0]!, args, { maxBuffer: 1 << 24 });
    const entries: EntryDigest[] = [];
    for (const name of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!name.isFile()) continue;
      const full = path.join(name.parentPath, name.name);
      entries.push({ name: path.relative(dir, full), sha256: createHash('sha256').update(readFileSync(full)).digest('hex') });
    }
    return { reader, entries };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function viaYauzl(file: string): Promise<EntryDigest[]> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, zip) => {
      if (err || !zip) return reject(err ?? new Error('yauzl: no zip'));
      const out: EntryDigest[] = [];
      zip.on('error', reject);
      zip.on('end', () => resolve(out));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/')) return void zip.readEntry();
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e ?? new Error('yauzl: no stream'));
          const hash = createHash('sha256');
          stream.on('data', (c: Buffer) => hash.update(c));
          stream.on('error', reject);
          stream.on('end', () => {
            out.push({ name: entry.fileName, sha256: hash.digest('hex') });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
