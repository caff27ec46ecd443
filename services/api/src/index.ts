export { createApp, type ApiContext, type AppOptions } from './app';
export { createUserWithKey } from './domain/users';
export { applyServerSettings } from './http/server-settings';
