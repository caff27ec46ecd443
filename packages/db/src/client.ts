import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

export type Db = InstanceType<typeof PrismaClient>;

/** One Prisma client per process; the pg pool behind the adapter is sized for a small service. */
export function createDb(databaseUrl: string, poolSize = 10): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: poolSize });
  return new PrismaClient({ adapter });
}

/** Db, or the client of a transaction on it. */
export type DbTx = Db | Parameters<Parameters<Db['$transaction']>[0]>[0];
