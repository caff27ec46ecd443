// Display helpers. Sizes are written as everywhere else (@ap/contract/sizes: decimal units).
import { formatBytes as bytes } from '@ap/contract/sizes';

export function formatBytes(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : bytes(value);
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatNumber(n: number, digits = 0): string {
  return n.toLocaleString(undefined, { maximumFractionDigits: digits });
}

/**
 * Splits the API's validation message ("zip_filename: ...; files[0].url: ...") into messages per
 * top-level field; text without a field path goes under "". The API joins problems with "; ",
 * and a problem's own text may contain "; " too: only a "; " followed by a field path splits.
 */
export function fieldErrors(message: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const part of message.split(/; (?=[a-z_]+(?:\[\d+\]|\.[a-z_]+)*: )/i)) {
    const match = /^([a-z_]+)((?:\[\d+\]|\.[a-z_]+)*): ([\s\S]+)$/i.exec(part);
    const field = match ? match[1]! : '';
    const text = match ? (match[2] ? `${match[2].replace(/^\./, '')}: ${match[3]}` : match[3]!) : part;
    (out[field] ??= []).push(text);
  }
  return out;
}
