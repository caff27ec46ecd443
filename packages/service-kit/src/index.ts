export { exitIfPortInUse, listen, onShutdown, PortInUseError, runReadinessChecks, startHealthServer, type ReadinessCheck } from './health';
export { createServiceContext, fetcherOptions, storageConfig, type ServiceContext } from './context';
export * as metrics from './metrics';
export { measuredFetcher } from './measured-fetcher';
