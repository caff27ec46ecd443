import { useEffect, useState } from 'preact/hooks';
import { useApi, useFailure, useLoadedList } from '../context';
import { ApiFailure, sessionEnded, WEBHOOK_EVENTS, type Delivery, type PageMeta, type Webhook, type WebhookEvent } from '../api';
import { Alert, Confirm, FieldError, Page, SecretOnce, StatusBadge } from '../components';
import { fieldErrors, formatDate } from '../format';

const DEFAULT_EVENTS: WebhookEvent[] = ['job.completed', 'job.failed'];

export function WebhooksPage() {
  const api = useApi();
  const { error, fail } = useFailure();
  const [hooks, load] = useLoadedList(async () => (await api.listWebhooks()).webhooks, fail);
  const [formErrors, setFormErrors] = useState<Record<string, string[]>>({});
  const [secret, setSecret] = useState<{ url: string; secret: string; rotated: boolean } | null>(null);
  const [deleting, setDeleting] = useState<Webhook | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);


  async function create(e: SubmitEvent) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const events = data.getAll('events').map(String) as WebhookEvent[];
    const description = String(data.get('description') ?? '').trim();
    setFormErrors({});
    setMessage(null);
    try {
      const { webhook } = await api.createWebhook({ url: String(data.get('url') ?? '').trim(), events, description: description || undefined });
      setSecret({ url: webhook.url, secret: webhook.secret, rotated: false });
      form.reset();
      await load();
    } catch (err) {
      if (sessionEnded(err)) return;
      const byField = err instanceof ApiFailure ? fieldErrors(err.message) : { '': [String(err)] };
      setFormErrors({ url: byField.url ?? [], events: byField.events ?? [], description: byField.description ?? [], form: byField[''] ?? [] });
    }
  }

  async function rotate(hook: Webhook) {
    setMessage(null);
    try {
      const { webhook } = await api.rotateWebhookSecret(hook.id);
      setSecret({ url: webhook.url, secret: webhook.secret, rotated: true });
    } catch (err) {
      fail(err);
    }
  }

  async function remove(hook: Webhook) {
    setDeleting(null);
    try {
      await api.deleteWebhook(hook.id);
      setMessage(`Webhook for ${hook.url} deleted.`);
      await load();
    } catch (err) {
      fail(err);
    }
  }

  return (
    <Page title="Webhooks">
      <p class="lead">The service POSTs signed events to your URLs when jobs end or downloads finish.</p>
      {error && <Alert>{error}</Alert>}
      {message && <Alert kind="success">{message}</Alert>}
      {secret ? (
        <SecretOnce
          label="Signing secret"
          value={secret.secret}
          note={
            secret.rotated
              ? `New signing secret for ${secret.url}. Copy it now: it will not be shown again. For 24 hours deliveries carry both the new and the old signature.`
              : `Signing secret for ${secret.url}. Copy it now: it will not be shown again.`
          }
          onDone={() => setSecret(null)}
        />
      ) : (
        <form class="card" onSubmit={create}>
          {formErrors.form?.length ? <Alert>{formErrors.form.join('; ')}</Alert> : null}
          <div class="field">
            <label for="hook-url">URL</label>
            <input id="hook-url" name="url" type="url" class="mono" required aria-describedby={formErrors.url?.length ? 'hook-url-error' : undefined} />
            <FieldError id="hook-url-error" messages={formErrors.url} />
          </div>
          <fieldset class="field">
            <legend>Events</legend>
            {WEBHOOK_EVENTS.map((event) => (
              <label class="check" key={event}>
                <input type="checkbox" name="events" value={event} defaultChecked={DEFAULT_EVENTS.includes(event)} />
                <code>{event}</code>
              </label>
            ))}
            <FieldError id="hook-events-error" messages={formErrors.events} />
          </fieldset>
          <div class="field">
            <label for="hook-description">Description</label>
            <input id="hook-description" name="description" />
            <FieldError id="hook-description-error" messages={formErrors.description} />
          </div>
          <button type="submit">Create webhook</button>
        </form>
      )}
      {hooks && hooks.length === 0 && <p class="empty">No webhooks.</p>}
      {hooks?.map((hook) => (
        <article class="card hook" key={hook.id} aria-labelledby={`hook-${hook.id}`}>
          <h2 id={`hook-${hook.id}`} class="mono break">
            {hook.url}
          </h2>
          {hook.description && <p>{hook.description}</p>}
          <p class="muted">
            {hook.events.join(', ')} · created {formatDate(hook.created_at)}
          </p>
          <div class="row">
            <button type="button" class="secondary small" aria-expanded={open === hook.id} onClick={() => setOpen(open === hook.id ? null : hook.id)}>
              Deliveries
            </button>
            <button type="button" class="secondary small" onClick={() => void rotate(hook)}>
              Rotate secret
            </button>
            <button type="button" class="danger small" onClick={() => setDeleting(hook)}>
              Delete
            </button>
          </div>
          {open === hook.id && <Deliveries webhookId={hook.id} />}
        </article>
      ))}
      {deleting && (
        <Confirm
          title="Delete this webhook?"
          message={<>No more events will be sent to {deleting.url}.</>}
          confirmLabel="Delete webhook"
          onConfirm={() => void remove(deleting)}
          onCancel={() => setDeleting(null)}
        />
      )}
    </Page>
  );
}

function Deliveries(props: { webhookId: string }) {
  const api = useApi();
  const [items, setItems] = useState<Delivery[]>([]);
  const [meta, setMeta] = useState<PageMeta | null>(null);
  const { error, fail } = useFailure();

  async function load(cursor?: string) {
    try {
      const res = await api.listDeliveries(props.webhookId, { cursor, limit: 20 });
      setItems((current) => (cursor ? [...current, ...res.deliveries] : res.deliveries));
      setMeta(res.meta);
    } catch (err) {
      fail(err);
    }
  }
  useEffect(() => void load(), [props.webhookId]);

  if (error) return <Alert>{error}</Alert>;
  if (!meta) return <p class="muted">Loading deliveries…</p>;
  if (items.length === 0) return <p class="empty">No deliveries yet.</p>;
  return (
    <div class="table-wrap">
      <table class="deliveries">
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last response</th>
            <th scope="col">Created</th>
            <th scope="col">Next attempt</th>
          </tr>
        </thead>
        <tbody>
          {items.map((d) => (
            <tr key={d.id}>
              <td data-label="Event">
                <code>{d.event}</code>
              </td>
              <td data-label="Status">
                <StatusBadge status={d.status} />
              </td>
              <td data-label="Attempts">{d.attempts}</td>
              <td data-label="Last response">{d.last_status_code ?? d.last_error ?? '—'}</td>
              <td data-label="Created">{formatDate(d.created_at)}</td>
              <td data-label="Next attempt">{formatDate(d.next_attempt_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {meta.has_more && meta.next_cursor && (
        <button type="button" class="secondary small" onClick={() => void load(meta.next_cursor!)}>
          More deliveries
        </button>
      )}
    </div>
  );
}
