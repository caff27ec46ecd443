// An object of string values validated by hand (metadata, request headers), so that no key is
// dropped silently and every problem is reported with its key.
import { z } from 'zod';

export type RecordProblem = (message: string, path?: PropertyKey[]) => void;

/** A plain JSON object whose entries `check` judges; `notObject` is the message for anything else. */
export function stringRecordSchema(notObject: string, check: (entries: [string, unknown][], problem: RecordProblem) => void) {
  return z.unknown().transform((value, ctx): Record<string, string> => {
    const proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value) || (proto !== Object.prototype && proto !== null)) {
      ctx.addIssue({ code: 'custom', message: notObject });
      return z.NEVER;
    }
    const entries = Object.entries(value as Record<string, unknown>);
    let bad = false;
    check(entries, (message, path = []) => {
      ctx.addIssue({ code: 'custom', message, path });
      bad = true;
    });
    if (bad) return z.NEVER;
    return Object.fromEntries(entries) as Record<string, string>;
  });
}
