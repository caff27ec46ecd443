// docker-compose.yml, the Dockerfile, k8s/ and the CI workflow are not run here (no Docker
// engine, no cluster). This validates them as far as can be done without: every manifest
// against the Kubernetes and KEDA schemas (kubernetes-models), the compose file against the
// compose-spec schema (the copy dclint ships), and the settings the code relies on (commands,
// grace periods, health checks, hardening, pinned images) against the code's own values.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import yaml from 'js-yaml';
import { Ajv } from 'ajv';
import * as coreV1 from 'kubernetes-models/v1';
import * as appsV1 from 'kubernetes-models/apps/v1';
import * as batchV1 from 'kubernetes-models/batch/v1';
import * as autoscalingV2 from 'kubernetes-models/autoscaling/v2';
import * as policyV1 from 'kubernetes-models/policy/v1';
import * as networkingV1 from 'kubernetes-models/networking.k8s.io/v1';
import * as kedaV1alpha1 from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { OPERATOR_BUNDLES } from '../scripts/runtime-image';
import { SERVICE_ENV, SERVICES, serviceArgs } from '../scripts/services';

const REQUIRED_ENV = [
  'DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT', 'S3_REGION', 'S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY',
  'S3_FORCE_PATH_STYLE', 'PUBLIC_BASE_URL', 'PORT', 'DOWNLOAD_TOKEN_SECRET', 'SESSION_SECRET', 'SECRETS_KEY', 'ALLOW_PRIVATE_URLS', 'LOG_LEVEL',
];
// docs/operations.md#the-rules: the API lets responses in flight finish for up to 25 s after
// SIGTERM; a packer hands its bin back within 10 s.
const API_DRAIN_S = 25;
const PACKER_HANDBACK_S = 10;

const root = new URL('../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, root), 'utf8');
const seconds = (duration: string) => {
  const m = /^(\d+)s$/.exec(duration);
  if (!m) throw new Error(`not a duration in seconds: ${duration}`);
  return Number(m[1]);
};

/** The compose-spec JSON schema as dclint ships it (dclint/schemas/compose.schema.json). */
function composeValidator() {
  const dclintDir = path.dirname(createRequire(import.meta.url).resolve('dclint/package.json'));
  const { $schema, ...schema } = JSON.parse(readFileSync(path.join(dclintDir, 'schemas/compose.schema.json'), 'utf8'));
  // It names draft-07 by an https URI that ajv does not know under that name; draft-07 is
  // ajv's default.
  expect($schema).toBe('https://json-schema.org/draft-07/schema');
  return new Ajv({ allErrors: true, strict: false }).compile(schema);
}

describe('docker-compose.yml', () => {
  const compose = yaml.load(read('docker-compose.yml')) as { services: Record<string, any> };
  const validate = composeValidator();

  it('is valid against the compose-spec schema (which does reject a wrong file)', () => {
    expect(validate(compose) ? [] : validate.errors).toEqual([]);
    const broken = structuredClone(compose);
    broken.services.api.stop_grace_period = { seconds: 30 };
    broken.services.packer.healthcheck.intervall = '5s';
    expect(validate(broken)).toBe(false);
    expect(validate.errors!.map((e) => e.instancePath)).toEqual(expect.arrayContaining(['/services/api/stop_grace_period', '/services/packer/healthcheck']));
  });

  it('runs postgres, redis, minio with its bucket, migrations, the three services and an admin command', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['admin', 'api', 'migrate', 'minio', 'minio-bucket', 'packer', 'postgres', 'preparer', 'redis']);
    expect(compose.services['minio-bucket'].entrypoint.join(' ')).toContain('mc mb --ignore-existing local/archives');
    expect(compose.services.migrate.command).toEqual(['node', OPERATOR_BUNDLES.migrate]);
    // One-shot, not started by `up`: `docker compose run --rm admin users create ...`.
    expect(compose.services.admin.entrypoint).toEqual(['node', OPERATOR_BUNDLES.admin]);
    expect(compose.services.admin.profiles).toEqual(['admin']);
  });

  it('gives every app container the full configuration, our image and the hardening of k8s/', () => {
    for (const name of [...SERVICES, 'migrate', 'admin']) {
      const svc = compose.services[name];
      expect(Object.keys(svc.environment)).toEqual(expect.arrayContaining(REQUIRED_ENV));
      expect(svc).toMatchObject({ build: '.', image: 'archive-packager:local', read_only: true, tmpfs: ['/tmp'], cap_drop: ['ALL'] });
    }
  });

  it('starts each service after its dependencies are healthy or done, and health-checks it', () => {
    for (const name of SERVICES) {
      const svc = compose.services[name];
      // The same bundle, flags and all, as `pnpm start` runs (scripts/services.ts).
      expect(svc.command).toEqual(['node', ...serviceArgs(name)]);
      expect(svc.depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        'minio-bucket': { condition: 'service_completed_successfully' },
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
      const port = name === 'api' ? 3000 : 8081;
      expect(svc.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${port}/readyz`);
    }
    for (const name of ['postgres', 'redis', 'minio']) expect(compose.services[name].healthcheck.test[0]).toBe('CMD');
  });

  it('gives the services the time their shutdown takes before Docker kills them', () => {
    expect(seconds(compose.services.api.stop_grace_period)).toBeGreaterThan(API_DRAIN_S);
    expect(seconds(compose.services.packer.stop_grace_period)).toBeGreaterThan(PACKER_HANDBACK_S);
    expect(seconds(compose.services.preparer.stop_grace_period)).toBeGreaterThanOrEqual(30);
  });

  it('pins every image it pulls to a version', () => {
    for (const [name, svc] of Object.entries(compose.services)) {
      if (svc.build) continue;
      expect([name, svc.image]).toEqual([name, expect.stringMatching(/^[\w./-]+:(?!latest$)[\w.-]*\d[\w.-]*$/)]);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('pins Node once and builds the runtime files in a stage of its own', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24\.\d+\.\d+-bookworm-slim$/m);
    expect(dockerfile.match(/^FROM .*$/gm)).toEqual(['FROM ${NODE_IMAGE} AS build', 'FROM ${NODE_IMAGE} AS runtime']);
    expect(dockerfile).toMatch(/^RUN pnpm install --frozen-lockfile && pnpm build:runtime \/runtime$/m);
  });

  it('copies only the runtime files into the last stage, which runs as a non-root user with the services\' environment', () => {
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    expect(runtime.match(/^COPY .*$/gm)).toEqual(['COPY --from=build /runtime /app']);
    expect(runtime).toMatch(/^USER node$/m);
    for (const [name, value] of Object.entries(SERVICE_ENV)) expect(runtime).toMatch(new RegExp(`^ENV ${name}=${value}$`, 'm'));
    // Its default command is the API as scripts/services.ts starts it (its V8 flags included).
    expect(runtime).toContain(`CMD [${['node', ...serviceArgs('api')].map((arg) => `"${arg}"`).join(', ')}]`);
  });

  it('is fed no host build output', () => {
    const ignored = read('.dockerignore').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist', 'packages/crc32/build']));
  });
});

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; spec?: any; data?: any; stringData?: any };

const MODELS: Record<string, Record<string, unknown>> = {
  v1: coreV1,
  'apps/v1': appsV1,
  'batch/v1': batchV1,
  'autoscaling/v2': autoscalingV2,
  'policy/v1': policyV1,
  'networking.k8s.io/v1': networkingV1,
  'keda.sh/v1alpha1': kedaV1alpha1,
};

/** Validates one manifest against its Kubernetes (or KEDA) schema; throws with the errors. */
function validateManifest(doc: Manifest): void {
  const Model = MODELS[doc.apiVersion]?.[doc.kind] as (new (data: unknown) => { validate(): void }) | undefined;
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate();
}

describe('k8s manifests', () => {
  const files = readdirSync(new URL('k8s/', root)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
  const docs = files.flatMap((f) => (yaml.loadAll(read(`k8s/${f}`)) as Manifest[]).map((doc) => ({ ...doc, file: f })));
  const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
  const kustomization = yaml.load(read('k8s/kustomization.yaml')) as { resources: string[]; images: { name: string; newName: string; newTag: string }[] };
  const deployment = (component: string) => byKind('Deployment').find((d) => d.metadata.name === `archive-packager-${component}`)!;
  const podSpecs = () => byKind('Deployment').map((d) => ({ name: d.metadata.name, spec: d.spec.template.spec }));
  const containersOf = (spec: any) => [...(spec.initContainers ?? []), ...spec.containers];

  it('every one is valid against the Kubernetes or KEDA schema of its kind (which does reject a wrong one)', () => {
    expect(docs.map((d) => d.kind).sort()).toEqual(
      ['ConfigMap', 'Deployment', 'Deployment', 'Deployment', 'HorizontalPodAutoscaler', 'Ingress', 'PodDisruptionBudget', 'PodDisruptionBudget', 'PodDisruptionBudget', 'ScaledObject', 'Secret', 'Service'],
    );
    for (const { file, ...doc } of docs) {
      try {
        validateManifest(doc);
      } catch (err) {
        throw new Error(`k8s/${file} ${doc.kind} ${doc.metadata?.name}: ${(err as Error).message}`);
      }
    }
    const badDeployment = structuredClone(deployment('packer'));
    badDeployment.spec.template.spec.containers[0].resources.limits.memory = 'a lot';
    expect(() => validateManifest(badDeployment)).toThrow(/memory/);
    const badScaler = structuredClone(byKind('ScaledObject')[0]!);
    badScaler.spec.triggers[0].metadata.threshold = 2;
    expect(() => validateManifest(badScaler)).toThrow(/threshold/);
  });

  it('kustomization.yaml applies every manifest but the Secret template and the Ingress example, and is the one place the image version is set', () => {
    expect([...kustomization.resources].sort()).toEqual(files.filter((f) => f !== 'secret.template.yaml' && f !== 'ingress.example.yaml').sort());
    expect(kustomization.images).toEqual([{ name: 'archive-packager', newName: expect.any(String), newTag: expect.stringMatching(/^\d+\.\d+\.\d+$/) }]);
    for (const { spec } of podSpecs()) for (const c of containersOf(spec)) expect(c.image).toBe(`archive-packager:${kustomization.images[0]!.newTag}`);
  });

  it('have a ConfigMap and Secret that together hold every variable, with AWS S3 as it is (no endpoint to delete)', () => {
    const cm = byKind('ConfigMap')[0]!;
    const secret = byKind('Secret')[0]!;
    expect(Object.keys({ ...cm.data, ...secret.stringData })).toEqual(expect.arrayContaining(REQUIRED_ENV.filter((name) => name !== 'S3_ENDPOINT')));
    expect(cm.data.S3_ENDPOINT).toBeUndefined();
    expect(cm.data.S3_FORCE_PATH_STYLE).toBe('false');
  });

  it('migrate before any service starts, in an init container of every pod that an apply can repeat (no Job whose template is immutable)', () => {
    expect(byKind('Job')).toEqual([]);
    const inits = podSpecs().map(({ spec }) => spec.initContainers);
    for (const init of inits) {
      expect(init).toHaveLength(1);
      expect(init[0]).toMatchObject({ name: 'migrate', command: ['node', OPERATOR_BUNDLES.migrate] });
      expect(init[0].image).toBe(podSpecs()[0]!.spec.containers[0].image);
      expect(init[0].envFrom).toEqual(podSpecs()[0]!.spec.containers[0].envFrom);
    }
    // One definition, written out in each Deployment: they must not drift apart.
    expect(new Set(inits.map((init) => JSON.stringify(init))).size).toBe(1);
  });

  it('leave the replica count of an autoscaled Deployment to its autoscaler, so an apply does not reset it', () => {
    const scaled = [...byKind('HorizontalPodAutoscaler').map((h) => h.spec.scaleTargetRef.name), ...byKind('ScaledObject').map((s) => s.spec.scaleTargetRef.name)];
    expect(scaled.sort()).toEqual(['archive-packager-api', 'archive-packager-packer']);
    for (const name of scaled) expect([name, byKind('Deployment').find((d) => d.metadata.name === name)!.spec.replicas]).toEqual([name, undefined]);
    expect(deployment('preparer').spec.replicas).toBeGreaterThanOrEqual(2);
  });

  it('give an example Ingress with TLS for the host of PUBLIC_BASE_URL, routing to the API Service', () => {
    const [ingress, ...others] = byKind('Ingress');
    expect(others).toEqual([]);
    const host = new URL(byKind('ConfigMap')[0]!.data.PUBLIC_BASE_URL).host;
    expect(new URL(byKind('ConfigMap')[0]!.data.PUBLIC_BASE_URL).protocol).toBe('https:');
    expect(ingress!.spec.tls).toEqual([{ hosts: [host], secretName: expect.any(String) }]);
    expect(ingress!.spec.rules.map((r: any) => r.host)).toEqual([host]);
    const backend = ingress!.spec.rules[0].http.paths[0].backend.service;
    const service = byKind('Service')[0]!;
    expect(backend.name).toBe(service.metadata.name);
    expect(service.spec.ports.map((p: any) => p.name)).toContain(backend.port.name);
  });

  it('have a Deployment per service running its bundle, probed on /healthz and /readyz', () => {
    expect(byKind('Deployment').map((d) => d.metadata.name).sort()).toEqual(SERVICES.map((s) => `archive-packager-${s}`).sort());
    for (const d of byKind('Deployment')) {
      const c = d.spec.template.spec.containers[0];
      expect(d.spec.selector.matchLabels).toEqual(d.spec.template.metadata.labels);
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      expect(c.envFrom.map((e: any) => Object.keys(e)[0]).sort()).toEqual(['configMapRef', 'secretRef']);
      expect(c.command).toEqual(['node', ...serviceArgs(d.metadata.labels!['app.kubernetes.io/component'] as (typeof SERVICES)[number])]);
      expect(d.spec.template.metadata.annotations).toEqual({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8081', 'prometheus.io/path': '/metrics' });
    }
    expect(byKind('Service')[0]!.spec.selector['app.kubernetes.io/component']).toBe('api');
  });

  it('give each pod the grace period its shutdown needs, and no more than a little over it', () => {
    const api = deployment('api').spec.template.spec;
    const preStop = Number(api.containers[0].lifecycle.preStop.exec.command[1]);
    expect(api.terminationGracePeriodSeconds).toBeGreaterThan(preStop + API_DRAIN_S);
    expect(api.terminationGracePeriodSeconds).toBeLessThanOrEqual(preStop + API_DRAIN_S + 10);
    const packer = deployment('packer').spec.template.spec.terminationGracePeriodSeconds;
    expect(packer).toBeGreaterThan(PACKER_HANDBACK_S);
    expect(packer).toBeLessThanOrEqual(PACKER_HANDBACK_S + 15);
  });

  it('run every container non-root with a read-only root filesystem, no capabilities, and resource requests and limits', () => {
    for (const { name, spec } of podSpecs()) {
      expect([name, spec.securityContext]).toEqual([name, expect.objectContaining({ runAsNonRoot: true, runAsUser: expect.any(Number), seccompProfile: { type: 'RuntimeDefault' } })]);
      expect(spec.automountServiceAccountToken).toBe(false);
      for (const c of containersOf(spec)) {
        expect([name, c.securityContext]).toEqual([name, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }]);
        expect([name, Object.keys(c.resources.requests).sort(), Object.keys(c.resources.limits).sort()]).toEqual([name, ['cpu', 'memory'], ['cpu', 'memory']]);
      }
    }
  });

  it('scale the API with an HPA and the packers with KEDA on the pack queue, within bounds', () => {
    const hpa = byKind('HorizontalPodAutoscaler');
    expect(hpa.map((h) => h.spec.scaleTargetRef)).toEqual([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'archive-packager-api' }]);
    expect(hpa[0]!.spec.minReplicas).toBeGreaterThanOrEqual(2);
    const [scaler, ...others] = byKind('ScaledObject');
    expect(others).toEqual([]);
    expect(scaler!.spec.scaleTargetRef).toEqual({ name: 'archive-packager-packer' });
    expect(scaler!.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaler!.spec.maxReplicaCount).toBeGreaterThan(scaler!.spec.minReplicaCount);
    const trigger = scaler!.spec.triggers[0];
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.query).toContain('archive_queue_jobs{queue="pack",state=~"waiting|active"}');
    // One packer per PACKER_CONCURRENCY bins.
    expect(trigger.metadata.threshold).toBe(byKind('ConfigMap')[0]!.data.PACKER_CONCURRENCY);
  });

  it('have a PodDisruptionBudget for each Deployment, selecting its pods', () => {
    const pdbs = byKind('PodDisruptionBudget');
    for (const d of byKind('Deployment')) {
      expect(pdbs.filter((p) => JSON.stringify(p.spec.selector.matchLabels) === JSON.stringify(d.spec.selector.matchLabels))).toHaveLength(1);
    }
  });
});

describe('.github/workflows/ci.yml', () => {
  const workflow = yaml.load(read('.github/workflows/ci.yml')) as { jobs: Record<string, { steps: { run?: string; uses?: string }[] }> };
  const runs = (job: string) => workflow.jobs[job]!.steps.map((s) => s.run ?? '').join('\n');

  it('installs what the tests need as ./dev test does: Chromium at /usr/bin/chromium, unzip, 7-Zip, bsdtar', () => {
    const test = runs('test');
    expect(test).toMatch(/apt-get install -y .*\bunzip\b.*\bp7zip-full\b.*\blibarchive-tools\b/);
    expect(workflow.jobs.test!.steps.some((s: { uses?: string }) => s.uses?.startsWith('browser-actions/setup-chrome@'))).toBe(true);
    expect(test).toContain('/usr/bin/chromium --version');
    expect(test.indexOf('/usr/bin/chromium')).toBeLessThan(test.indexOf('./dev test'));
  });

  it('runs the tests, and the smoke test (with its prefix job into a MinIO bucket) against docker compose up --wait with the first user\'s key', () => {
    expect(runs('test')).toContain('./dev test');
    const smoke = runs('compose-smoke');
    expect(smoke).toMatch(/docker compose up .*--wait/);
    expect(smoke).toContain('docker compose run --rm -T admin users create');
    // The key in the environment: pnpm echoes a command line's arguments into the log.
    expect(smoke).toMatch(/ARCHIVE_API_KEY="\$SMOKE_API_KEY" pnpm smoke --base-url http:\/\/localhost:3000/);
    expect(smoke).not.toContain('--api-key');
    // A prefix job written into a bucket of a second MinIO (issue 36; the stack's own store is
    // refused as a source or destination), its keys in the environment too.
    expect(smoke).toMatch(/docker run --detach --name customer-s3 --network "\$network"/);
    expect(smoke).toMatch(/pnpm smoke .*--s3-endpoint http:\/\/customer-s3:9000/);
    expect(smoke).not.toMatch(/--s3-endpoint http:\/\/minio:9000/);
    expect(smoke).toContain('SMOKE_S3_SECRET_ACCESS_KEY=');
  });
});
