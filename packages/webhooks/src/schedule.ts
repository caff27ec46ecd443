// Delivery retries (docs/webhooks.md#webhooks): about 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 12 h
// after the failures, about a day in all, then `failed`. The schedule is in units of a base
// (one minute; WEBHOOK_RETRY_BASE_MS), so tests run the whole schedule in seconds.

/** Waits after the 1st, 2nd, ... failed attempt, in base units (minutes by default). */
export const RETRY_SCHEDULE = [1, 5, 30, 120, 300, 600, 720] as const;
/** The first attempt plus one per step of the schedule. */
export const MAX_DELIVERY_ATTEMPTS = RETRY_SCHEDULE.length + 1;
export const DEFAULT_RETRY_BASE_MS = 60_000;
/** docs/webhooks.md#delivery-rules: a 2xx within 10 s is success. Fixed: it is the contract. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** The wait before the next attempt after `attemptsMade` attempts failed, or null when none is left. */
export function nextRetryDelayMs(attemptsMade: number, baseMs: number = DEFAULT_RETRY_BASE_MS): number | null {
  if (attemptsMade < 1 || attemptsMade >= MAX_DELIVERY_ATTEMPTS) return null;
  return RETRY_SCHEDULE[attemptsMade - 1]! * baseMs;
}
