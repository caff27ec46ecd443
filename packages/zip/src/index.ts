export { crc32, crc32Combine } from './crc32';
export { dosTime, type DosTime } from './format';
export { deflateBound, layoutOfFiles, planZip, renderSegment, sliceRange, zipSize, ZipSizer, type PlacedEntry, type Segment, type SegmentSlice, type ZipEntryInput, type ZipLayout } from './layout';
export { packBins, type Bin, type BinInput, type BinOptions, type BinPacking, type SplitStrategy } from './bins';
export { newZipFile, newZipOutput, YAZL_ENTRY_OPTIONS, type ZipOutput } from './yazl-options';
export { AesZipWriter } from './aes-writer';
export { crcsNeededUpfront, crcStart, planCrc, streamEtag, type CrcCheckpoint, type CrcPlan, type StreamInputValidators } from './stream-plan';
export { buildRange, extendCheckpoint, planRange, planSlices, type BodySource, type BuiltRange, type KnownCrcs, type RangePiece, type RangePlan } from './range';
export { AES_EXTRA, AES_MAC, AES_METHOD, AES_OVERHEAD, AesCtr, deriveAesKeys, EntryMac, entrySalt, ZipEncryption, type AesKeys } from './aes';
