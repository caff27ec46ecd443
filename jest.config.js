// Tests sit beside the code (*.test.ts). TypeScript is compiled by SWC as native ESM;
// type checking is done once by `tsc --noEmit` in `pnpm test`.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/test', '<rootDir>/scripts', '<rootDir>/bench'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
  // A worker's own exit (V8 and heap teardown after its event loop emptied) took 0.2-0.6 s on
  // the loaded 2-core machine, past jest's 0.5 s: it was then killed and reported as a leak.
  // A real leak (a handle keeping the loop alive) still outlasts this and is reported.
  workerGracefulExitTimeout: 5000,
};
