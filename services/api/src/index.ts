export { createApp, settleDownloads, type ApiContext, type AppOptions } from './app';
export { applyServerSettings } from './http/server-settings';
