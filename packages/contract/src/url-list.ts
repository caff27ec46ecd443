// The one format of a list of file URLs, read by the CLI (`--from FILE`) and the dashboard
// (the URLs box and its text file): one `URL [filename]` per line; blank lines and lines
// starting with `#` are skipped. A URL never holds a raw space (the API refuses one; write
// %20), so the first run of spaces or tabs ends it and the rest of the line is the filename.

export interface UrlListEntry {
  url: string;
  filename?: string;
}

export function parseUrlList(text: string): UrlListEntry[] {
  const out: UrlListEntry[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [, url, filename] = /^(\S+)(?:\s+(.+))?$/.exec(line)!;
    out.push(filename ? { url: url!, filename } : { url: url! });
  }
  return out;
}
