export { generateSecretsKey, keyringFrom, parseSecretsKey, KEY_BYTES, type Keyring, type SecretsKey } from './keyring';
export { openSecret, resealSecret, sealSecret, sealedKeyId, secretBox, SecretUnreadableError, type SecretBox } from './seal';
