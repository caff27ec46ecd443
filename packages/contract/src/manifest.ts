// manifest.csv (docs/archive-options.md#formats-and-contents): the last entry of an archive of a job with
// `manifest: true`. RFC 4180: CRLF line ends, a field quoted when it holds a comma, a quote, CR
// or LF (its quotes doubled). Header `name,size,sha256,url,error`; one row per file packaged
// (URL without its query string or fragment, error empty), then one per URL left out (name, size
// and sha256 empty). Decided: each archive lists its own files and the URLs left out while it
// was packed; the first also lists those left out while the job was prepared. An error is cut
// to MANIFEST_ERROR_MAX_CHARS characters (so that a split job can reserve the manifest's room).

export const MANIFEST_HEADER = 'name,size,sha256,url,error';
export const MANIFEST_ERROR_MAX_CHARS = 200;

export type ManifestRow = { name: string; size: number; sha256: string; url: string } | { url: string; error: string };

function field(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** A URL as the manifest shows it: no query string (it may hold a signature) and no fragment. */
export function urlWithoutQuery(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
}

function cutError(error: string): string {
  const chars = [...error];
  return chars.length <= MANIFEST_ERROR_MAX_CHARS ? error : chars.slice(0, MANIFEST_ERROR_MAX_CHARS).join('');
}

/** The manifest's bytes. */
export function manifestCsv(rows: readonly ManifestRow[]): Buffer {
  const lines = [MANIFEST_HEADER];
  for (const row of rows) {
    if ('error' in row) lines.push(['', '', '', field(urlWithoutQuery(row.url)), field(cutError(row.error))].join(','));
    else lines.push([field(row.name), String(row.size), row.sha256, field(urlWithoutQuery(row.url)), ''].join(','));
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8');
}

/** The most bytes a file's row can take, packaged or left out (its name and URL quoted in full, the longest error). */
export function manifestRowBound(name: string, url: string): number {
  const quoted = (s: string) => 2 * Buffer.byteLength(s) + 2;
  const packaged = quoted(name) + 20 + 64 + quoted(url) + 6;
  const leftOut = quoted(url) + 2 * 4 * MANIFEST_ERROR_MAX_CHARS + 2 + 6;
  return Math.max(packaged, leftOut);
}

/** The manifest's bytes beyond its rows: the header line. */
export const MANIFEST_HEADER_BYTES = MANIFEST_HEADER.length + 2;
