// docker-compose.yml and k8s/ are not run here (no Docker engine); this checks that they parse
// and that every service gets the whole operator configuration and health probes.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { SERVICE_ENV, SERVICES, serviceArgs } from '../scripts/services';

const REQUIRED_ENV = [
  'DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT', 'S3_REGION', 'S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY',
  'S3_FORCE_PATH_STYLE', 'PUBLIC_BASE_URL', 'PORT', 'DOWNLOAD_TOKEN_SECRET', 'SESSION_SECRET', 'ALLOW_PRIVATE_URLS', 'LOG_LEVEL',
];
const root = new URL('../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, root), 'utf8');

describe('docker-compose.yml', () => {
  const compose = yaml.load(read('docker-compose.yml')) as { services: Record<string, any> };

  it('runs postgres, redis, minio with its bucket, migrations and the three services', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'minio', 'minio-bucket', 'packer', 'postgres', 'preparer', 'redis']);
    expect(compose.services['minio-bucket'].entrypoint.join(' ')).toContain('mc mb --ignore-existing local/archives');
  });

  it('gives every app service the full configuration and starts it after migrations', () => {
    for (const name of [...SERVICES, 'migrate']) {
      const svc = compose.services[name];
      expect(Object.keys(svc.environment)).toEqual(expect.arrayContaining(REQUIRED_ENV));
      expect(svc.build).toBe('.');
    }
    for (const name of SERVICES) {
      // The same bundle, flags and all, as `pnpm start` runs (scripts/services.ts).
      expect(compose.services[name].command).toEqual(['node', ...serviceArgs(name)]);
      expect(compose.services[name].depends_on.migrate.condition).toBe('service_completed_successfully');
    }
  });

  it('builds with a Dockerfile whose stages exist', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^FROM node:20\S* AS deps$/m);
    expect(dockerfile).toMatch(/COPY --from=deps/);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile && pnpm build$/m);
    for (const [name, value] of Object.entries(SERVICE_ENV)) expect(dockerfile).toMatch(new RegExp(`^ENV ${name}=${value}$`, 'm'));
  });
});

describe('k8s manifests', () => {
  const docs = readdirSync(new URL('k8s/', root))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => yaml.loadAll(read(`k8s/${f}`)) as any[]);
  const byKind = (kind: string) => docs.filter((d) => d?.kind === kind);

  it('parse, and have a ConfigMap and Secret that together hold every variable', () => {
    const cm = byKind('ConfigMap')[0];
    const secret = byKind('Secret')[0];
    expect(Object.keys({ ...cm.data, ...secret.stringData })).toEqual(expect.arrayContaining(REQUIRED_ENV));
  });

  it('have a Deployment per service with probes on /healthz and /readyz, and a Service for the API', () => {
    const deployments = byKind('Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(SERVICES.map((s) => `archive-packager-${s}`).sort());
    for (const d of deployments) {
      const c = d.spec.template.spec.containers[0];
      expect(d.spec.selector.matchLabels).toEqual(d.spec.template.metadata.labels);
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      expect(c.envFrom.map((e: any) => Object.keys(e)[0]).sort()).toEqual(['configMapRef', 'secretRef']);
      expect(c.command).toEqual(['node', ...serviceArgs(d.metadata.labels['app.kubernetes.io/component'])]);
    }
    const svc = byKind('Service')[0];
    expect(svc.spec.selector['app.kubernetes.io/component']).toBe('api');
  });

  it('have a migration Job', () => {
    const job = byKind('Job')[0];
    expect(job.spec.template.spec.containers[0].command.join(' ')).toContain('scripts/migrate.ts');
  });
});
