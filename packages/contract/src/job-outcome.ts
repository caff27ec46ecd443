// What a job's readers show of its outcome, the same in GET /jobs/:id and in webhook bodies
// (api.md "Job (read, full form)", "ZIP entry"; decisions.md "Webhooks"): the `errors` list and
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
      };
    }),
  };
}
