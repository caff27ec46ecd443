export { createDb, type Db, type DbTx } from './client';
export { migrate, ensureDatabase, dropDatabase, MIGRATIONS_DIR, type MigrationResult } from './migrate';
export * from './generated/client';
export * from './jobs';
export * from './job-files';
export * from './zips';
export * from './zip-parts';
export * from './sources';
export * from './api-keys';
