// Every column that holds a sealed secret (@ap/secrets), in one list: `pnpm admin secrets
// rotate` re-seals each of them under the current SECRETS_KEY. A feature that stores a new
// secret adds its column here, with the place its values were sealed for.
import type { SecretBox } from '@ap/secrets';
import type { DbTx } from '@ap/db';
import { fileHeadersPlace } from './file-access';
import { sourceSecretPlace } from './sources';
import { encryptionPasswordPlace } from './archive-options';
import { isPlainWebhookSecret, webhookPreviousSecretPlace, webhookSecretPlace } from '@ap/webhooks';

export interface SealedColumn {
  table: string;
  column: string;
  /** Columns that identify a row (its primary key). */
  keys: readonly string[];
  /** The place a row's value was sealed for (its associated data). */
  place(row: Record<string, unknown>): string;
  /** Values stored in plain text before the column was sealed: the rotation seals them. */
  isPlain?(stored: string): boolean;
}

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: 'sources', column: 'secret_access_key', keys: ['id'], place: (row) => sourceSecretPlace(String(row.id)) },
  { table: 'job_files', column: 'headers', keys: ['job_id', 'position'], place: (row) => fileHeadersPlace(String(row.job_id), Number(row.position)) },
  { table: 'jobs', column: 'encryption_password', keys: ['id'], place: (row) => encryptionPasswordPlace(String(row.id)) },
  { table: 'webhooks', column: 'secret', keys: ['id'], place: (row) => webhookSecretPlace(String(row.id)), isPlain: isPlainWebhookSecret },
  { table: 'webhooks', column: 'previous_secret', keys: ['id'], place: (row) => webhookPreviousSecretPlace(String(row.id)), isPlain: isPlainWebhookSecret },
];

export interface RotationReport {
  table: string;
  column: string;
  /** Values sealed under another key (or stored plain), now under the current one. */
  resealed: number;
  /** Values already under the current key. */
  current: number;
}

const BATCH = 500;
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Re-seals every stored secret under the current key. A value is replaced only if it is still
 * the one read (a concurrent writer wins); run again, it finds nothing left to do. Values under
 * neither key throw (SecretUnreadableError): the rotation stops before the old key is dropped.
 */
export async function rotateSealedColumns(db: DbTx, secrets: Pick<SecretBox, 'seal' | 'reseal' | 'currentKeyId'>, columns: readonly SealedColumn[] = SEALED_COLUMNS): Promise<RotationReport[]> {
  const reports: RotationReport[] = [];
  for (const col of columns) {
    const report: RotationReport = { table: col.table, column: col.column, resealed: 0, current: 0 };
    const keys = col.keys.map(ident).join(', ');
    // Keyset pagination over the primary key; values already under the current key are skipped in SQL.
    let after: unknown[] | null = null;
    for (;;) {
      const where: string = after ? `AND (${keys}) > (${after.map((_, i) => `$${i + 1}`).join(', ')})` : '';
      const rows: Record<string, unknown>[] = await db.$queryRawUnsafe(
        `SELECT ${keys}, ${ident(col.column)} AS sealed FROM ${ident(col.table)}
          WHERE ${ident(col.column)} IS NOT NULL ${where} ORDER BY ${keys} LIMIT ${BATCH}`,
        ...(after ?? []),
      );
      if (rows.length === 0) break;
      for (const row of rows) {
        const stored = String(row.sealed);
        const resealed = col.isPlain?.(stored) ? secrets.seal(stored, col.place(row)) : secrets.reseal(stored, col.place(row));
        if (resealed === undefined) {
          report.current++;
          continue;
        }
        const match = col.keys.map((k, i) => `${ident(k)} = $${i + 3}`).join(' AND ');
        await db.$executeRawUnsafe(`UPDATE ${ident(col.table)} SET ${ident(col.column)} = $1 WHERE ${ident(col.column)} = $2 AND ${match}`, resealed, row.sealed, ...col.keys.map((k) => row[k]));
        report.resealed++;
      }
      const last = rows[rows.length - 1]!;
      after = col.keys.map((k) => last[k]);
    }
    reports.push(report);
  }
  return reports;
}
