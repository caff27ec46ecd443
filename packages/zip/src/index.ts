export { crc32, crc32Combine } from './crc32';
export { dosTime, type DosTime } from './format';
export { planZip, renderSegment, sliceRange, zipSize, ZipSizer, type PlacedEntry, type Segment, type SegmentSlice, type ZipEntryInput, type ZipLayout } from './layout';
export { packBins, type Bin, type BinInput, type BinOptions, type BinPacking, type SplitStrategy } from './bins';
export { newZipFile, YAZL_ENTRY_OPTIONS } from './yazl-options';
export { crcsNeededUpfront, crcStart, planCrc, streamEtag, type CrcCheckpoint, type CrcPlan, type StreamInputValidators } from './stream-plan';
export { buildRange, extendCheckpoint, planRange, planSlices, type BodySource, type BuiltRange, type KnownCrcs, type RangePiece, type RangePlan } from './range';
export { AES_EXTRA, AES_MAC, AES_METHOD, AES_OVERHEAD, AesCtr, deriveAesKeys, EntryMac, entrySalt, ZipEncryption, type AesKeys } from './aes';
