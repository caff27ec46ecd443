export { createPackerProcessor, packBin } from './processor';
export { BinBusy, LeaseLost } from './lease';
export { writeArchive, ARCHIVE_TOO_LARGE, type BodyObserver, type ArchiveFile, type ArchiveOptions, type ArchiveResult } from './archive';
export { CrcStore } from './crc-store';
export { LayoutReader, LAYOUT_READER_DEFAULTS, BATCH_BYTES, layoutInputsOf, type LayoutInput, type LayoutReaderOptions, type RecordedInput } from './layout-reader';
