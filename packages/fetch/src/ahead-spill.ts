/**
 * Spilling ahead to disk (docs/engine.md#spilling-ahead-to-disk): a body that cannot be split
 * into ranges (an origin without a strong validator), larger than its reservation, fetched
 * ahead while the archive waits on the network, keeps a short lead in memory and writes the
 * rest of its bytes to the process's spill area instead of waiting for its reader. Its
 * reservation shrinks to that lead, so that further bodies are opened on the connections left.
 */
import { BodyStream } from './body';
import type { Slot } from './ahead-slot';
import type { RangedState } from './ranged-mode';
import type { SpillArea } from './spill-area';

/** What a spilling body keeps in memory (at most a slice): its reader's first bytes, read back from disk after them. */
const SPILL_LEAD = 1024 * 1024;

/**
 * Lets a slot's body spill (or stops it: ranged mode off, the body waits as it would without
 * a spill area). The memory its reservation may give back now, 0 when none.
 */
export function updateSpill(slot: Slot<unknown>, area: SpillArea | null | undefined, state: RangedState, slice: number): number {
  const body = slot.body;
  if (!area || !(body instanceof BodyStream) || !slot.unsplittable || slot.released || body.fetched) return 0;
  const allowed = slot.partial && (state === 'on' || slot.probeLead);
  body.spillTo(allowed ? area : null);
  // A full area: the body keeps its reservation (and waits, as without one).
  if (!allowed || area.room() <= 0) return 0;
  const keep = Math.max(body.heldBytes, Math.min(SPILL_LEAD, slice));
  return Math.max(0, slot.reserved - keep);
}
