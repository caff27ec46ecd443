import { randomBytes } from 'node:crypto';

/** ZIP ids carry the contract's `zip_` prefix and 128 random bits. */
export const newZipId = (): string => `zip_${randomBytes(16).toString('hex')}`;

/** Where a bin's ZIP is stored (the same key for every attempt, so a re-run overwrites it). */
export const objectKeyFor = (jobId: string, zipId: string): string => `jobs/${jobId}/${zipId}.zip`;
