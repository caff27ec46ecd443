import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ZipVerificationError } from './verify';
import { verifyTar } from './verify-tar';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sdk-tar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('verifyTar', () => {
  // GNU tar's pax output (a name over 100 bytes gets a pax header), plain and gzipped.
  writeFileSync(path.join(dir, 'a.txt'), 'hello\n');
  const long = `${'n'.repeat(120)}.bin`;
  writeFileSync(path.join(dir, long), Buffer.alloc(1000, 7));
  execFileSync('tar', ['--format=pax', '-cf', path.join(dir, 'x.tar'), '-C', dir, 'a.txt', long]);
  execFileSync('tar', ['--format=pax', '-czf', path.join(dir, 'x.tar.gz'), '-C', dir, 'a.txt', long]);

  it('counts the entries and their bytes of a whole tar and tar.gz', async () => {
    const size = readFileSync(path.join(dir, 'x.tar')).length;
    expect(await verifyTar(path.join(dir, 'x.tar'), { expectedSize: size })).toEqual({ entries: 2, contentBytes: 1006, crcChecked: false });
    expect(await verifyTar(path.join(dir, 'x.tar.gz'), { gzip: true })).toEqual({ entries: 2, contentBytes: 1006, crcChecked: false });
  });

  it('refuses a cut tar, a wrong size and a damaged header', async () => {
    const bytes = readFileSync(path.join(dir, 'x.tar'));
    writeFileSync(path.join(dir, 'cut.tar'), bytes);
    truncateSync(path.join(dir, 'cut.tar'), 2048);
    await expect(verifyTar(path.join(dir, 'cut.tar'))).rejects.toThrow(ZipVerificationError);
    await expect(verifyTar(path.join(dir, 'x.tar'), { expectedSize: bytes.length + 1 })).rejects.toThrow(/the API says/);
    const damaged = Buffer.from(bytes);
    damaged[0] = damaged[0]! ^ 1;
    writeFileSync(path.join(dir, 'bad.tar'), damaged);
    await expect(verifyTar(path.join(dir, 'bad.tar'))).rejects.toThrow(/checksum/);
  });
});
