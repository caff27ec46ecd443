export * from './errors';
export * from './plans';
export * from './text';
export * from './sizes';
export * from './url-list';
export * from './filename-template';
export * from './entry-names';
export * from './schemas';
export * from './archive-options';
export * from './private-sources';
export * from './prefix-entries';

export * from './webhooks';
export * from './responses';
export * from './job-outcome';
export * from './openapi';
export * from './manifest';
