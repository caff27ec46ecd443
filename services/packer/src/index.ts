export { createPackerProcessor, packBin } from './processor';
export { BinBusy, LeaseLost } from './lease';
