export * from './download-token';
export * from './api-keys';
