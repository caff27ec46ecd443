// What a job's readers show of its outcome, the same in GET /jobs/:id and in webhook bodies
// (api.md "Job (read, full form)", "ZIP entry"; docs/webhooks.md#webhooks): the `errors` list and
// the `zips` entries. Pure, from row-shaped values.
import type { ZipEntryView } from './responses';

export interface OutcomeFile {
  url: string;
  error: string | null;
  zipId: string | null;
}

export interface OutcomeZip {
  id: string;
  sequence: number;
  status: ZipEntryView['status'];
  filename: string;
  fileCount: number;
  size: bigint | number | null;
  error: string | null;
  /** Bytes written so far (the packer records it about once a second). */
  bytesDone?: bigint | number;
  /** Size predicted by the layout, when every input size is known. */
  plannedSize?: bigint | number | null;
}

/** A ZIP's progress figures (docs/fair-share.md#progress-of-a-job); stream ZIPs are never written ahead. */
export function zipProgress(z: Pick<OutcomeZip, 'status' | 'size' | 'bytesDone' | 'plannedSize'>, stream: boolean): { bytes_done: number; expected_size: number | null } {
  const completed = z.status === 'completed' && z.size !== null;
  const expected = z.plannedSize ?? (completed ? z.size : null);
  return {
    bytes_done: stream ? 0 : completed ? Number(z.size) : Number(z.bytesDone ?? 0),
    expected_size: expected === null || expected === undefined ? null : Number(expected),
  };
}

/**
 * Sum of bytes done over sum of expected sizes, to 3 decimals, below 1 until the job completes;
 * null while a size is unknown (no bins yet, or an input without a known length).
 */
export function jobProgress(status: string, zips: readonly { bytes_done: number; expected_size: number | null }[]): number | null {
  if (status === 'completed') return 1;
  if (zips.length === 0 || zips.some((z) => z.expected_size === null)) return null;
  const expected = zips.reduce((s, z) => s + z.expected_size!, 0);
  if (expected === 0) return 0;
  const share = Math.min(1, zips.reduce((s, z) => s + z.bytes_done, 0) / expected);
  return Math.min(Math.round(share * 1000) / 1000, 0.999);
}

export interface UrlError {
  url: string;
  error: string;
}

/**
 * File errors under their URL, then each ZIP's own failure and the job's with an empty url
 * (failures that belong to no URL, e.g. a bin over the plan's archive limit); a ZIP entry lists
 * the errors of its files and its own. `zips` come out in sequence order.
 */
export function jobOutcome(input: {
  files: Iterable<OutcomeFile>;
  zips: readonly OutcomeZip[];
  jobError: string | null;
  /** The signed link of a ZIP, or null when it is not downloadable. */
  downloadUrl(zip: OutcomeZip): string | null;
  /** A stream job: its ZIPs are built at download time, nothing is written ahead. */
  stream?: boolean;
}): { errors: UrlError[]; zips: ZipEntryView[] } {
  const errors: UrlError[] = [];
  const byZip = new Map<string, UrlError[]>();
  const add = (zipId: string | null, entry: UrlError) => {
    errors.push(entry);
    if (zipId) byZip.set(zipId, [...(byZip.get(zipId) ?? []), entry]);
  };
  for (const f of input.files) if (f.error !== null) add(f.zipId, { url: f.url, error: f.error });
  const zips = [...input.zips].sort((a, b) => a.sequence - b.sequence);
  for (const z of zips) if (z.error !== null) add(z.id, { url: '', error: z.error });
  if (input.jobError !== null) add(null, { url: '', error: input.jobError });
  return {
    errors,
    zips: zips.map((z) => {
      const zipErrors = byZip.get(z.id);
      return {
        id: z.id,
        sequence: z.sequence,
        status: z.status,
        filename: z.filename,
        file_count: z.fileCount,
        size: z.status === 'completed' && z.size !== null ? Number(z.size) : null,
        download_url: input.downloadUrl(z),
        ...(zipErrors ? { errors: zipErrors } : {}),
        ...zipProgress(z, input.stream ?? false),
      };
    }),
  };
}
