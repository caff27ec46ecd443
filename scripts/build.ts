// `pnpm build`: bundles the three services into services/<name>/dist/main.js (scripts/services.ts).
// `pnpm start`, the tests and the benches run it themselves; the Dockerfile runs it once.
import { buildServices, bundlePath, SERVICES } from './services';

await buildServices();
process.stdout.write(`built ${SERVICES.map(bundlePath).join(', ')}\n`);
