export { createApp, type ApiContext } from './app';
export { createUserWithKey } from './domain/users';
