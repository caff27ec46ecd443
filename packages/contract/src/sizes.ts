// Sizes as users read them, in the API's messages, the CLI and the dashboard: decimal units
// (1 MB = 10^6 bytes, 1 GB = 10^9), as the plans and quotas count them (docs/api.md#limits).

const STEPS = ['kB', 'MB', 'GB', 'TB', 'PB'];

/** "999 B", "1.5 MB", "104.9 MB", "2 GB": one decimal at most, decimal units. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  let value = bytes;
  let step = -1;
  while (value >= 999.95 && step < STEPS.length - 1) {
    value /= 1000;
    step++;
  }
  return `${value.toFixed(1).replace(/\.0$/, '')} ${STEPS[step]}`;
}

const UNITS: Record<string, number> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4,
  kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4,
};

/**
 * Bytes of a size as a user types it: `104857600` (bytes), `500MB`, `1.5 GB`; binary units
 * (`2GiB`, `100M`) are read as such. Null when it is not a size.
 */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!m) return null;
  const unit = (m[2] ?? '').toLowerCase();
  const factor = unit === '' ? 1 : UNITS[unit];
  if (factor === undefined) return null;
  const bytes = Number(m[1]) * factor;
  return Number.isSafeInteger(Math.round(bytes)) ? Math.round(bytes) : null;
}
