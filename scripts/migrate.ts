// Applies the SQL migrations in prisma/migrations (what `prisma migrate deploy` would do,
// without Prisma's native engine). Used by the k8s migration Job and docker-compose, there as
// the bundle dist/migrate.js (scripts/runtime-image.ts), one folder below the root like this file.
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrate } from '@ap/db';
import { DEFAULT_DATABASE_URL } from './dev-env';

const MIGRATIONS_DIR = fileURLToPath(new URL('../prisma/migrations', import.meta.url));

const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
await ensureDatabase(url);
const result = await migrate(url, MIGRATIONS_DIR);
process.stdout.write(`migrations applied: ${result.applied.length ? result.applied.join(', ') : 'none'} (already applied: ${result.alreadyApplied.length})\n`);
process.exit(0);
