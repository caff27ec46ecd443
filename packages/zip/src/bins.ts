import { ZipSizer, zipSize } from './layout';

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
