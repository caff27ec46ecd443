export * from './route-doc';
export * from './routes';
export * from './document';
