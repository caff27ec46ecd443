// What is derived from a bin's file rows: its ZIP layout, and an entry's name from what a
// response or probe said about its file.
import { deriveEntryName } from '@ap/contract';
import type { JobFileRow } from '@ap/db';
import { planZip, type ZipLayout } from '@ap/zip';

/** The ZIP layout of a bin whose files all have their entry name and size. */
export function layoutOfFiles(files: readonly Pick<JobFileRow, 'entryName' | 'size'>[], mtime: Date): ZipLayout {
  return planZip(
    files.map((f) => ({ name: f.entryName!, size: Number(f.size) })),
    { mtime },
  );
}

/**
 * A file's entry name (before de-duplication) from what its probe or response said: the name
 * the client gave, else the response's Content-Disposition, else the final URL, else by position.
 */
export function entryNameOf(file: Pick<JobFileRow, 'position' | 'filename'>, seen: { contentDisposition?: string | null; finalUrl: string }): string {
  return deriveEntryName({ givenFilename: file.filename, contentDisposition: seen.contentDisposition, finalUrl: seen.finalUrl, index: file.position + 1 });
}
