/**
 * The options every packer entry is added to yazl with; the layout in this package
 * reproduces exactly the bytes yazl writes with them (format.test.ts).
 */
export function YAZL_ENTRY_OPTIONS(mtime: Date, size: number | null): { mtime: Date; compress: false; size?: number } {
  return size === null ? { mtime, compress: false } : { mtime, compress: false, size };
}
