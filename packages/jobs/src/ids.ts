import { randomBytes } from 'node:crypto';

/** ZIP ids carry the contract's `zip_` prefix and 128 random bits. */
export const newZipId = (): string => `zip_${randomBytes(16).toString('hex')}`;
