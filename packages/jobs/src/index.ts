export { createJob, needsPreparing, type NewJob } from './create';
export { retryJob, type RetryOutcome } from './retry';
export { deleteJob } from './delete';
export { aggregateJobStatus, type BinStatus, type JobStatus } from './status';
export { newZipId, objectKeyFor } from './ids';
export { reconcile, sweepExpired, startMaintenance, MAINTENANCE_INTERVAL_MS, STALE_AFTER_MS, type MaintenanceScope, type ReconcileReport } from './maintenance';
export { BinProgress, binProgress, segmentProgress, PROGRESS_INTERVAL_MS } from './progress';
export { queueBinsOf, queuePrepare } from './fair-share';
export { settleJob, CANCELLED_BY_FAIL_FAST, type SettleOptions } from './settle';
export { endJob, announceDeliveries, type EndStatus } from './end';
export {
  archiveOptionColumns,
  type ArchiveOptionColumns,
  deflateLevelOf,
  encryptionPasswordPlace,
  foldersOf,
  gzipLevelOf,
  JOB_ARCHIVE_OPTIONS_SELECT,
  zipEncryptionOf,
  type JobArchiveOptions,
  type SealFor,
} from './archive-options';
export { sourceSecretPlace } from './sources';
export { binFilesWithAccess, fileAccessOf, fileHeadersPlace, type FileAccessColumns } from './file-access';
export { rotateSealedColumns, SEALED_COLUMNS, type RotationReport, type SealedColumn } from './sealed-columns';
export { expandPrefixEntries, NO_OBJECTS_UNDER_PREFIX, prefixPastLimitError, type PrefixExpansion } from './prefix-entries';
export { DESTINATION_ACCESS_DENIED, destinationBlocked, destinationRules, type DestinationRules, DestinationRefused, destinationKey, destinationStore, hasDestination, isAccessRefusal, zipLocation, type DestinationColumns } from './destination';
export { BYTE_SECONDS_PER_GB_DAY, monthStart, STORED_QUOTA_USED_UP, storedQuotaExceeded, streamQuotaExceeded, usageThisMonth } from './quota';
