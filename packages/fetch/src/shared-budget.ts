/** A memory budget several archives fetching ahead in one process share (ahead.ts). */

/**
 * Memory the archives written at once in one process (the API's stream downloads) share for
 * their bodies fetched ahead: each keeps its own budget, and together they reserve at most
 * `bytes`, except that an archive's body next in line is always opened, with a short lead
 * (ahead.ts `LEAD_WHILE_FAST`) when the shared budget is spent. So many downloads at once cost memory up
 * to this plus that lead each, not a whole budget each.
 */
export class SharedBudget {
  private used = 0;
  /** Archives that stopped for want of room, told once when some is given back. */
  private readonly waiting = new Set<() => void>();

  constructor(readonly bytes: number) {}

  /** Bytes reserved now, by every archive together. */
  get usedBytes(): number {
    return this.used;
  }

  /** Bytes not reserved now (negative once archives' next bodies opened past it). */
  room(): number {
    return this.bytes - this.used;
  }

  fits(bytes: number): boolean {
    return bytes <= this.room();
  }

  /** Reserves (positive) or gives back (negative); archives waiting for room are told of room. */
  change(bytes: number): void {
    this.used += bytes;
    if (bytes >= 0 || this.waiting.size === 0) return;
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const wake of waiting) wake();
  }

  /** `wake` runs once, the next time room is given back. */
  wakeOnRoom(wake: () => void): void {
    this.waiting.add(wake);
  }

  forget(wake: () => void): void {
    this.waiting.delete(wake);
  }
}
