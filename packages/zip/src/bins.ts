import { deflateBound, ZipSizer, zipSize } from './layout';
import { TarSizer } from './tar-layout';

export type SplitStrategy = 'preserve-order' | 'ffd';

export interface BinInput {
  /** The file's input position; bins list these, and each bin keeps them ascending. */
  index: number;
  name: string;
  size: number;
}

export interface Bin {
  indexes: number[];
  /** Exact byte length of this bin's ZIP, entries in input order. */
  size: number;
  oversize: boolean;
}

export type BinPacking = { ok: true; bins: Bin[] } | { ok: false; index: number; error: string };

export interface BinOptions {
  maxZipSize: number;
  strategy: SplitStrategy;
  allowOversize: boolean;
  /** Every entry WinZip AES-256 encrypted (28 bytes of data and 11 of extra field per header more). */
  aes?: boolean;
  /** The archives are tars, or tars gzipped whole (capped by the most gzip can write for the tar). */
  format?: 'zip' | 'tar' | 'tar.gz';
}

/** zlib's gzip framing: a 10-byte header and an 8-byte trailer around the raw deflate. */
const GZIP_FRAMING = 18;

/** The most bytes a gzip of `tarSize` bytes can be (zlib's deflateBound with its gzip wrapper). */
export function gzipBound(tarSize: number): number {
  return deflateBound(tarSize) + GZIP_FRAMING;
}

/** Exact size of a tar of these entries; with `gzip`, the most its gzip can be. */
export function tarArchiveSize(entries: readonly { name: string; size: number }[], gzip = false): number {
  const sizer = new TarSizer();
  for (const e of entries) sizer.add(e.name, e.size);
  return gzip ? gzipBound(sizer.total()) : sizer.total();
}

/** A tar's sizer seen as ZipSizer's interface, its totals the format's cap measure. */
class TarBinSizer {
  private readonly tar = new TarSizer();
  constructor(private readonly gzip: boolean) {}
  add(f: BinInput): void {
    this.tar.add(f.name, f.size);
  }
  totalWith(f: BinInput): number {
    const size = this.tar.totalWith(f.name, f.size);
    return this.gzip ? gzipBound(size) : size;
  }
  total(): number {
    return this.gzip ? gzipBound(this.tar.total()) : this.tar.total();
  }
}

/** Bins of tars: their sizes do not depend on order, so first fit decreasing needs no ZIP64 recount. */
function packTarBins(files: readonly BinInput[], options: BinOptions, gzip: boolean): BinPacking {
  const alone = (f: BinInput) => tarArchiveSize([f], gzip);
  for (const f of files) {
    if (alone(f) > options.maxZipSize && !options.allowOversize) {
      return { ok: false, index: f.index, error: `file is larger than max_zip_size_bytes allows: its archive alone would be ${alone(f)} bytes, over ${options.maxZipSize} (allow_oversize_zips is false)` };
    }
  }
  const order = options.strategy === 'ffd' ? [...files].sort((a, b) => b.size - a.size || a.index - b.index) : files;
  const bins: { files: BinInput[]; sizer: TarBinSizer; oversize: boolean }[] = [];
  for (const f of order) {
    const oversize = alone(f) > options.maxZipSize;
    const target = oversize ? undefined : options.strategy === 'ffd' ? bins.find((b) => !b.oversize && b.sizer.totalWith(f) <= options.maxZipSize) : bins.at(-1);
    if (target && !target.oversize && target.sizer.totalWith(f) <= options.maxZipSize) {
      target.files.push(f);
      target.sizer.add(f);
      continue;
    }
    const sizer = new TarBinSizer(gzip);
    sizer.add(f);
    bins.push({ files: [f], sizer, oversize });
  }
  return {
    ok: true,
    bins: bins.map((b) => ({ indexes: b.files.map((f) => f.index).sort((x, y) => x - y), size: b.sizer.total(), oversize: b.oversize })),
  };
}

interface OpenBin {
  files: BinInput[];
  sizer: ZipSizer;
}

/**
 * Splits files into ZIPs of at most `maxZipSize` bytes each (docs/product-rules.md#sizes-probing-and-bins): the limit applies to the whole archive, records included. A file that cannot fit
 * even alone takes a bin of its own when oversize is allowed, else packing fails on it.
 */
export function packBins(files: readonly BinInput[], options: BinOptions): BinPacking {
  if (options.format === 'tar' || options.format === 'tar.gz') return packTarBins(files, options, options.format === 'tar.gz');
  const aes = options.aes === true;
  const alone = (f: BinInput) => zipSize([{ name: f.name, size: f.size }], { aes })!;
  for (const f of files) {
    if (alone(f) > options.maxZipSize && !options.allowOversize) {
      return { ok: false, index: f.index, error: `file is larger than max_zip_size_bytes allows: its ZIP alone would be ${alone(f)} bytes, over ${options.maxZipSize} (allow_oversize_zips is false)` };
    }
  }
  return { ok: true, bins: options.strategy === 'ffd' ? firstFitDecreasing(files, options.maxZipSize, alone, aes) : preserveOrder(files, options.maxZipSize, alone, aes) };
}

function nameBytes(f: BinInput): number {
  return Buffer.byteLength(f.name);
}

function preserveOrder(files: readonly BinInput[], max: number, alone: (f: BinInput) => number, aes: boolean): Bin[] {
  const bins: Bin[] = [];
  let open: OpenBin | null = null;
  const close = () => {
    if (open) bins.push({ indexes: open.files.map((f) => f.index), size: open.sizer.total(), oversize: false });
    open = null;
  };
  for (const f of files) {
    const size = alone(f);
    if (size > max) {
      close();
      bins.push({ indexes: [f.index], size, oversize: true });
      continue;
    }
    if (open === null || (open as OpenBin).sizer.totalWith(nameBytes(f), f.size) > max) {
      close();
      open = { files: [], sizer: new ZipSizer(aes) };
    }
    (open as OpenBin).files.push(f);
    (open as OpenBin).sizer.add(nameBytes(f), f.size);
  }
  close();
  return bins;
}

/**
 * First fit, largest first (ties in input order). A bin's entries are written in input order,
 * so its exact size is taken in that order: placement order only matters once a bin's bodies
 * pass 4 GiB (ZIP64 offsets), and only then is the size recomputed in full.
 */
function firstFitDecreasing(files: readonly BinInput[], max: number, alone: (f: BinInput) => number, aes: boolean): Bin[] {
  const order = [...files].sort((a, b) => b.size - a.size || a.index - b.index);
  const bins: { files: BinInput[]; sizer: ZipSizer; oversize: boolean }[] = [];
  for (const f of order) {
    const size = alone(f);
    if (size > max) {
      const sizer = new ZipSizer(aes);
      sizer.add(nameBytes(f), f.size);
      bins.push({ files: [f], sizer, oversize: true });
      continue;
    }
    const target = bins.find((b) => !b.oversize && fitsInInputOrder(b.files, b.sizer, f, max, aes));
    if (target) {
      target.files.push(f);
      target.sizer.add(nameBytes(f), f.size);
    } else {
      const sizer = new ZipSizer(aes);
      sizer.add(nameBytes(f), f.size);
      bins.push({ files: [f], sizer, oversize: false });
    }
  }
  return bins.map((b) => {
    const inOrder = [...b.files].sort((x, y) => x.index - y.index);
    return { indexes: inOrder.map((f) => f.index), size: zipSize(inOrder, { aes })!, oversize: b.oversize };
  });
}

const ZIP64_OFFSET = 0xfffffffe;

function fitsInInputOrder(files: BinInput[], placed: ZipSizer, f: BinInput, max: number, aes: boolean): boolean {
  const quick = placed.totalWith(nameBytes(f), f.size);
  // Below 4 GiB of bodies no offset needs ZIP64, so the size does not depend on order.
  if (quick <= ZIP64_OFFSET) return quick <= max;
  const all = [...files, f].sort((a, b) => a.index - b.index);
  return zipSize(all, { aes })! <= max;
}
