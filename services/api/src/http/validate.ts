import type { z } from 'zod';
import { ApiError, formatZodError } from '@ap/contract';

/** Parses a request part with a contract schema; any problem is a 400 INVALID_REQUEST naming it. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new ApiError('INVALID_REQUEST', formatZodError(result.error));
  return result.data;
}
