// `create --compress [LEVEL]` and `--password-file FILE`: deflate (stored jobs) and WinZip
// AES-256; `--format zip|tar|tar.gz` (with tar.gz, --compress LEVEL is the gzip level),
// and `--manifest` (manifest.csv, stored jobs). The password is read from a file, never from an argument: arguments show in `ps`
// and shell history.
import { readFile } from 'node:fs/promises';
import { Option } from 'commander';
import type { JobCreateRequest } from '@ap/sdk';

export interface ArchiveOptionFlags {
  compress?: true | string;
  passwordFile?: string;
  format?: 'zip' | 'tar' | 'tar.gz';
  manifest?: boolean;
}

export const formatOption = () => new Option('--format <format>', 'archive format (tar.gz: stored jobs; --compress LEVEL sets its gzip level)').choices(['zip', 'tar', 'tar.gz']);
export const manifestOption = () => new Option('--manifest', 'end the archive with manifest.csv: name, size, SHA-256 and URL of each file, then each URL left out (stored jobs)');

export const compressOption = () => new Option('--compress [level]', 'deflate every entry (stored jobs), level 1-9, default 6');
export const passwordFileOption = () =>
  new Option('--password-file <file>', 'encrypt with WinZip AES-256; the password is the file\'s first line (8-128 characters)');

/** The body fields the flags ask for; `fail` reports a usage error (no password in it). */
export async function archiveOptionFields(flags: ArchiveOptionFlags, fail: (message: string) => Error): Promise<Partial<JobCreateRequest>> {
  const fields: Partial<JobCreateRequest> = {};
  if (flags.format !== undefined) fields.format = flags.format;
  if (flags.manifest) fields.manifest = true;
  if (flags.compress !== undefined) {
    // A tar.gz is gzipped whole: its level is compression_level, its entries are stored.
    if (flags.format !== 'tar.gz') fields.compression = 'deflate';
    if (flags.compress !== true) {
      const level = Number(flags.compress);
      if (!/^[1-9]$/.test(flags.compress) || !Number.isInteger(level)) throw fail(`--compress takes a level from 1 to 9 (got ${JSON.stringify(flags.compress)})`);
      fields.compression_level = level;
    }
  }
  if (flags.passwordFile !== undefined) {
    const text = await readFile(flags.passwordFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw fail(`cannot read --password-file ${flags.passwordFile}: ${err.code ?? 'unreadable'}`);
    });
    const password = text.split(/\r?\n/, 1)[0]!;
    if (password.length === 0) throw fail(`--password-file ${flags.passwordFile}: the first line is empty`);
    fields.encryption = { method: 'aes-256', password };
  }
  return fields;
}
