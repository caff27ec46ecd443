export { createJob, needsPreparing, type NewJob } from './create';
export { retryJob, type RetryOutcome } from './retry';
export { aggregateJobStatus, type BinStatus, type JobStatus } from './status';
export { createWorkQueues, enqueue, type WorkQueues } from './queues';
export { newZipId, objectKeyFor } from './ids';
export { reconcile, sweepExpired, STALE_AFTER_MS, type ReconcileReport } from './maintenance';
export { mapLimit } from './concurrency';
export { settleJob, CANCELLED_BY_FAIL_FAST, type SettleOptions } from './settle';
export { endJob, announceDeliveries, type EndStatus } from './end';
