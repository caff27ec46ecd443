/** The file entries of the lines: s3:// URLs read with `source` (the new-job form's choice). */
export function fileEntriesOf(lines: readonly string[], source: string): { url: string; source?: string }[] {
  return lines.map((url) => (url.startsWith('s3://') && source ? { url, source } : { url }));
}

/** One URL per line; blank lines and lines starting with "#" are skipped. */
export function parseUrlList(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}
