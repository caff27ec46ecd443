/**
 * Connections per origin host, across every archive a process writes (docs/engine.md#fetching-ahead):
 * at most `FETCH_HOST_CONNECTIONS`, fewer after the host pushed back. A 429 or 503 halves what
 * the host is given (never more than it had in flight then) and, with `Retry-After`, opens no new
 * connection to it before that time; a reset or a timeout halves it too. Once the host has
 * answered well for a calm period (5 s, or twice its Retry-After), each second of good answers
 * gives one connection back, up to the cap, as download managers do. The fetch-ahead scheduler
 * asks `room` before opening a connection beyond the one its consumer waits for (bodies ahead,
 * ranges), and a retry after a push-back waits for room (`whenRoom`); a first attempt never
 * waits here, so the body in turn is never held back by others' reservations.
 */

interface HostState {
  /** Requests open now. */
  open: number;
  /** Requests it may have open now (the cap, or fewer after it pushed back). */
  allowed: number;
  /** No new connection before this time (performance.now()). */
  until: number;
  /** No connection given back before this time (a calm period after a push-back). */
  calmAt: number;
}

const CALM_MS = 5000;
const RAISE_EVERY_MS = 1000;

export class HostLimits {
  private readonly hosts = new Map<string, HostState>();
  private readonly waiting = new Set<() => void>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;

  constructor(readonly perHost: number) {}

  private stateOf(host: string): HostState {
    let state = this.hosts.get(host);
    if (!state) {
      state = { open: 0, allowed: this.perHost, until: 0, calmAt: 0 };
      this.hosts.set(host, state);
    }
    return state;
  }

  /** Whether one more connection to `host` may open now; if not, `wake` runs once when it may. */
  room(host: string, wake?: () => void): boolean {
    const state = this.hosts.get(host);
    if (!state) return true;
    const now = performance.now();
    if (state.open < state.allowed && now >= state.until) return true;
    if (wake) this.wakeLater(wake, state.until > now ? state.until - now : null);
    return false;
  }

  /** Connections `host` may have open now (tests, metrics). */
  allowed(host: string): number {
    return this.hosts.get(host)?.allowed ?? this.perHost;
  }

  /** A request to `host` opened; the function ends it (once). */
  opened(host: string): () => void {
    const state = this.stateOf(host);
    state.open++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      state.open--;
      this.wakeAll();
      if (state.open === 0 && state.allowed === this.perHost && state.calmAt <= performance.now()) this.hosts.delete(host);
    };
  }

  /** A response came back well: one more connection after a calm period, one a second, up to the cap. */
  succeeded(host: string): void {
    const state = this.hosts.get(host);
    const now = performance.now();
    if (!state || state.allowed >= this.perHost || now < state.calmAt) return;
    state.allowed++;
    state.calmAt = now + RAISE_EVERY_MS;
    this.wakeAll();
  }

  /** Resolves once `room(host)` (a retry after a push-back waits so); rejects when `signal` aborts. */
  whenRoom(host: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const aborted = () => {
        this.waiting.delete(check);
        reject(signal!.reason as Error);
      };
      const check = () => {
        if (signal?.aborted) return aborted();
        if (!this.room(host, check)) return;
        signal?.removeEventListener('abort', aborted);
        resolve();
      };
      signal?.addEventListener('abort', aborted, { once: true });
      check();
    });
  }

  /**
   * The host pushed back (429, 503, a reset, a timeout): half of what it had open, at least
   * one; with `retryAfterMs`, nothing new before then.
   */
  pushedBack(host: string, retryAfterMs?: number): void {
    const state = this.stateOf(host);
    state.allowed = Math.max(1, Math.min(state.allowed, Math.floor(state.open / 2)));
    const now = performance.now();
    const wait = retryAfterMs !== undefined && retryAfterMs > 0 ? retryAfterMs : 0;
    state.until = Math.max(state.until, now + wait);
    state.calmAt = Math.max(state.calmAt, now + Math.max(CALM_MS, 2 * wait));
  }

  private wakeLater(wake: () => void, inMs: number | null): void {
    this.waiting.add(wake);
    if (inMs === null || performance.now() + inMs >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = performance.now() + inMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      this.wakeAll();
    }, inMs + 1);
    this.timer.unref();
  }

  private wakeAll(): void {
    if (this.waiting.size === 0) return;
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }
}
