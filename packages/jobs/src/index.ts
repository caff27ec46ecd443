export { createJob, needsPreparing, type NewJob } from './create';
export { retryJob, type RetryOutcome } from './retry';
export { aggregateJobStatus, type BinStatus, type JobStatus } from './status';
export { createWorkQueues, enqueue, type WorkQueues } from './queues';
export { newZipId, objectKeyFor } from './ids';
export { reconcile, sweepExpired, startMaintenance, MAINTENANCE_INTERVAL_MS, STALE_AFTER_MS, type MaintenanceScope, type ReconcileReport } from './maintenance';
export { mapLimit } from './concurrency';
export { settleJob, CANCELLED_BY_FAIL_FAST, type SettleOptions } from './settle';
export { endJob, announceDeliveries, type EndStatus } from './end';
export {
  assignJobFilesToBin,
  binFiles,
  clearFileErrors,
  entryNameOf,
  filesToProbe,
  insertJobFiles,
  jobFileViews,
  layoutOfFiles,
  recordCrcCheckpoint,
  recordCrcs,
  recordEntries,
  recordFileErrors,
  recordProbedFiles,
  resetBinFilesForRepack,
  resetJobFiles,
  binLeaseRemainingMs,
  binUploadParts,
  binWithJob,
  createBins,
  forgetBinUpload,
  markBinCompleted,
  markBinFailed,
  markBinUploadNotResumable,
  recordBinPart,
  recordBinUpload,
  releaseBinLease,
  renewBinLease,
  takeBinLease,
  type BinRow,
  type NewBin,
  type BinFileRow,
  type DbTx,
  type JobFileRow,
  type JobFileView,
  type NewJobFileRow,
  type ProbedFileRecord,
} from './files';
export { createSource, deleteSource, listSources, resolveSourceRefs, sourceCredentials, sourceSecretPlace, type SourceRow } from './sources';
export { binFilesWithAccess, fileAccessOf, fileHeadersPlace, type FileAccessColumns } from './file-access';
export { rotateSealedColumns, SEALED_COLUMNS, type RotationReport, type SealedColumn } from './sealed-columns';
