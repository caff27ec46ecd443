// `pnpm build`: bundles the three services into services/<name>/dist/main.js (scripts/services.ts)
// and builds the dashboard into packages/dashboard/dist (served by the API at /dashboard).
// `pnpm start`, the tests and the benches run it themselves; the Dockerfile runs it once.
import { buildDashboard, DASHBOARD_DIST } from '@ap/dashboard';
import { buildServices, bundlePath, SERVICES } from './services';

await Promise.all([buildServices(), buildDashboard()]);
process.stdout.write(`built ${SERVICES.map(bundlePath).join(', ')}, ${DASHBOARD_DIST}\n`);
