// `--split 100MB`, `2GiB`, `104857600`: decimal units (as the API's plan limits) and binary ones.
const UNITS: Record<string, number> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4,
  kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4,
};

/** Bytes of a size written as a number with an optional unit; null when it is not one. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!m) return null;
  const unit = (m[2] ?? '').toLowerCase();
  const factor = unit === '' ? 1 : UNITS[unit];
  if (factor === undefined) return null;
  const bytes = Number(m[1]) * factor;
  return Number.isSafeInteger(Math.round(bytes)) ? Math.round(bytes) : null;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 'B';
  for (const u of units) {
    if (value < 1000) break;
    value /= 1000;
    unit = u;
  }
  return `${value.toFixed(value < 10 ? 2 : 1)} ${unit}`;
}

/** `--from FILE` lines: `URL [filename]`; blank lines and `#` comments are skipped. */
export function parseUrlList(text: string): { url: string; filename?: string }[] {
  const out: { url: string; filename?: string }[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+)(?:\s+(.+))?$/.exec(line)!;
    out.push(m[2] ? { url: m[1]!, filename: m[2].trim() } : { url: m[1]! });
  }
  return out;
}
