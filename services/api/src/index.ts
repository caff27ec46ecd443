export { createApp, type ApiContext, type AppOptions } from './app';
export { createUserWithKey } from './domain/users';
export { answerClientErrors } from './http/client-errors';
