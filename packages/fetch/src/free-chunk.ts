/**
 * Frees a body chunk's memory now instead of at the next full GC, when the chunk is the whole
 * of its ArrayBuffer (never a slice of a shared one, such as Node's small-buffer pool): moving
 * the memory to a clone that is dropped at once detaches the chunk (it reads as empty
 * afterwards), and the clone, a young object, gives the memory back at the next scavenge. Why:
 * a body read ahead waits in its stream's buffer long enough for its chunks to be promoted to
 * V8's old generation, and once written they stay allocated until a full GC, which V8 starts
 * only when about 64 MiB of such memory has built up (docs/engine.md#fetching-ahead).
 * For whoever writes the chunks on and does not use them again (the packer's upload, the API's
 * stream download).
 */
export function freeChunk(chunk: Buffer): void {
  const memory = chunk.buffer;
  if (chunk.byteOffset !== 0 || chunk.byteLength !== memory.byteLength || !(memory instanceof ArrayBuffer) || memory.byteLength === 0) return;
  try {
    structuredClone(memory, { transfer: [memory] });
  } catch {
    // Not transferable (an ArrayBuffer Node marked so): left to the GC as before.
  }
}
