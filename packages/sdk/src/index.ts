export * from './client';
export * from './download';
export * from './verify';
export type { components, operations, paths } from './openapi';
