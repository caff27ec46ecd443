export { createUserWithKey, verifyLogin, type CreateUserInput } from './users';
