// Node entry: everything in the browser-safe `@ap/sdk/client`, with the ArchiveClient that can
// also download (node.ts), the ZIP check and the generated document types.
export * from './client';
export { ArchiveClient } from './node';
export * from './download';
export * from './verify';
export { verifyTar } from './verify-tar';
