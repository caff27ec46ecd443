export { runReadinessChecks, startHealthServer, onShutdown, type ReadinessCheck } from './health';
export { createServiceContext, storageConfig, type ServiceContext } from './context';
