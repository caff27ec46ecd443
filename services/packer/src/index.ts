export { createPackerProcessor, packBin, objectKeyFor } from './processor';
export { writeArchive, ARCHIVE_TOO_LARGE, type ArchiveFile, type ArchiveOptions, type ArchiveResult } from './archive';
