export { createDb, type Db } from './client';
export { migrate, ensureDatabase, dropDatabase, MIGRATIONS_DIR, type MigrationResult } from './migrate';
export * from './generated/client';
