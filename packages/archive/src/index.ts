export { writeArchive, ARCHIVE_TOO_LARGE, BinFailure, UrlFailure, type BodyObserver, type ArchiveFile, type ArchiveOptions, type ArchiveResult } from './archive';
export { CrcStore } from './crc-store';
export { CrcWork, CRC_WORK_DEFAULTS, type CrcWorkOptions } from './crc-work';
export { LayoutReader, LAYOUT_READER_DEFAULTS, BATCH_BYTES, layoutInputsOf, type LayoutInput, type LayoutReaderOptions, type RecordedInput } from './layout-reader';
export { bodyBudgetBesideParts, packBinIntoStore, type BinToPack, type PackDeps, type PackedBin, type PackTuning, type ProgressReport } from './pack';
export { dropRecordedUpload, type BinFile } from './resume';
export { combinedCrcs, finishSegments, packSegment, segmentPlanOf, type PartialCrc, type SegmentedBin, type SegmentResult } from './segments';
export { assembleInStore, headsAsRecorded, objectsForServerCopy, serverCopyEntries, type ServerCopyBin, type ServerCopySettings } from './server-copy';
export { crcsOfSegments, readSegmentCrcs } from './server-copy-segments';
export {
  finishSegmentedBin,
  isUploadGone,
  plannedSizeOf,
  probedFiles,
  recordedParts,
  segmentedUpload,
  segmentedUploadLayout,
  segmentKindOf,
  segmentsOf,
  type FleetBin,
  type SegmentKind,
} from './segmented-bin';
