export { createPreparerProcessor } from './processor';
export { prepareJob } from './processor';
