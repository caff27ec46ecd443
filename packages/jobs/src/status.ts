export type BinStatus = 'pending' | 'processing' | 'completed' | 'failed';
export type JobStatus = 'preparing' | BinStatus;

/**
 * A job's status is the aggregate of its bins (docs/product-rules.md#lifecycle):
 * with fail_on_zip_error any failed bin fails the job; otherwise the job ends when every bin
 * has ended, completed if at least one bin completed. Work under way reads as processing.
 */
export function aggregateJobStatus(bins: readonly BinStatus[], failOnZipError: boolean): BinStatus {
  if (bins.length === 0) return 'pending';
  let pending = 0;
  let processing = 0;
  let completed = 0;
  let failed = 0;
  for (const s of bins) {
    if (s === 'pending') pending++;
    else if (s === 'processing') processing++;
    else if (s === 'completed') completed++;
    else failed++;
  }
  if (failed > 0 && failOnZipError) return 'failed';
  if (pending === 0 && processing === 0) return completed > 0 ? 'completed' : 'failed';
  if (processing > 0 || completed > 0 || failed > 0) return 'processing';
  return 'pending';
}
