// Sources (docs/private-sources.md#the-rules): S3-compatible buckets whose credentials the service
// stores encrypted, for s3://bucket/key lines of new jobs. The secret is sent once and never shown.
import { useState } from 'preact/hooks';
import { useApi, useFailure, useLoadedList } from '../context';
import { ApiFailure, sessionEnded, type Source } from '../api';
import { Alert, Confirm, FieldError, Page } from '../components';
import { fieldErrors, formatDate } from '../format';

const FIELDS = ['name', 'region', 'endpoint', 'access_key_id', 'secret_access_key'] as const;

export function SourcesPage() {
  const api = useApi();
  const { error, fail } = useFailure();
  const [sources, load] = useLoadedList(async () => (await api.listSources()).sources, fail);
  const [formErrors, setFormErrors] = useState<Record<string, string[]>>({});
  const [deleting, setDeleting] = useState<Source | null>(null);
  const [message, setMessage] = useState<string | null>(null);


  async function create(e: SubmitEvent) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    setFormErrors({});
    setMessage(null);
    try {
      const { source } = await api.createSource({
        name: text('name'),
        type: 's3',
        region: text('region'),
        access_key_id: text('access_key_id'),
        secret_access_key: String(data.get('secret_access_key') ?? ''),
        ...(text('endpoint') ? { endpoint: text('endpoint') } : {}),
        force_path_style: data.get('force_path_style') === 'on',
      });
      form.reset();
      setMessage(`Source ${source.name} created. Use it for s3://bucket/key lines in a new job.`);
      await load();
    } catch (err) {
      if (sessionEnded(err)) return;
      const byField = err instanceof ApiFailure ? fieldErrors(err.message) : { '': [String(err)] };
      setFormErrors(Object.fromEntries([...FIELDS.map((f) => [f, byField[f] ?? []]), ['form', byField[''] ?? (err instanceof ApiFailure && err.code !== 'INVALID_REQUEST' ? [err.message] : [])]]));
    }
  }

  async function remove(source: Source) {
    setDeleting(null);
    try {
      await api.deleteSource(source.id);
      setMessage(`Source ${source.name} deleted.`);
      await load();
    } catch (err) {
      fail(err);
    }
  }

  const field = (name: (typeof FIELDS)[number], label: string, hint: string, type: 'text' | 'url' | 'password' = 'text', required = true) => (
    <div class="field">
      <label for={`source-${name}`}>{label}</label>
      {hint && (
        <p class="hint" id={`source-${name}-hint`}>
          {hint}
        </p>
      )}
      <input
        id={`source-${name}`}
        name={name}
        type={type as 'text'}
        class="mono"
        required={required}
        autocomplete="off"
        aria-invalid={formErrors[name]?.length ? 'true' : undefined}
        aria-describedby={[hint ? `source-${name}-hint` : '', formErrors[name]?.length ? `source-${name}-error` : ''].filter(Boolean).join(' ') || undefined}
      />
      <FieldError id={`source-${name}-error`} messages={formErrors[name]} />
    </div>
  );

  return (
    <Page title="Sources">
      <p class="lead">Buckets of yours the service reads with your credentials: AWS S3, Cloudflare R2, MinIO and other S3-compatible services. Secrets are stored encrypted and never shown again.</p>
      {error && <Alert>{error}</Alert>}
      {message && <Alert kind="success">{message}</Alert>}
      <form class="card" onSubmit={create}>
        {formErrors.form?.length ? <Alert>{formErrors.form.join('; ')}</Alert> : null}
        {field('name', 'Name', 'What new jobs call it: letters, digits, "_" and "-".')}
        {field('region', 'Region', 'e.g. us-east-1; auto for R2.')}
        {field('endpoint', 'Endpoint', 'Empty for AWS S3; e.g. https://<account>.r2.cloudflarestorage.com', 'url', false)}
        {field('access_key_id', 'Access key id', '')}
        {field('secret_access_key', 'Secret access key', 'Sent once, stored encrypted, never shown again.', 'password')}
        <label class="check">
          <input type="checkbox" name="force_path_style" />
          Path-style addressing (MinIO and some other services)
        </label>
        <button type="submit">Create source</button>
      </form>
      {sources && sources.length === 0 && <p class="empty">No sources.</p>}
      {sources?.map((source) => (
        <article class="card hook" key={source.id} aria-labelledby={`source-${source.id}`}>
          <h2 id={`source-${source.id}`} class="mono break">
            {source.name}
          </h2>
          <p class="muted">
            {source.endpoint ?? 'AWS S3'} · {source.region} · key <code>{source.access_key_id}</code> · created {formatDate(source.created_at)}
          </p>
          <div class="row">
            <button type="button" class="danger small" onClick={() => setDeleting(source)}>
              Delete
            </button>
          </div>
        </article>
      ))}
      {deleting && (
        <Confirm
          title="Delete this source?"
          message={<>Jobs that read objects through {deleting.name} will fail to read them (stream downloads and retries included).</>}
          confirmLabel="Delete source"
          onConfirm={() => void remove(deleting)}
          onCancel={() => setDeleting(null)}
        />
      )}
    </Page>
  );
}
