export { createPackerProcessor } from './processor';
export { packBin, objectKeyFor, ARCHIVE_TOO_LARGE } from './processor';
