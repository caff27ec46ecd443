import { useState } from 'preact/hooks';
import { useApi, useFailure, useLoadedList } from '../context';
import { ApiFailure, sessionEnded, type ApiKey } from '../api';
import { Alert, Confirm, FieldError, Page, SecretOnce } from '../components';
import { fieldErrors, formatDate } from '../format';

// The list never has the key itself (it is stored hashed): every row shows the same mask.
const MASK = 'azk_••••••••••••';

export function KeysPage() {
  const api = useApi();
  const { error, fail } = useFailure();
  const [keys, load] = useLoadedList(async () => (await api.listKeys()).api_keys, fail);
  const [formErrors, setFormErrors] = useState<Record<string, string[]>>({});
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [message, setMessage] = useState<string | null>(null);


  async function create(e: SubmitEvent) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const name = String(data.get('name') ?? '').trim();
    const expires = String(data.get('expires') ?? '');
    setFormErrors({});
    setMessage(null);
    try {
      const { api_key } = await api.createKey({ name: name || undefined, expires_at: expires ? new Date(expires).toISOString() : undefined });
      setCreated({ name: api_key.name, key: api_key.key });
      form.reset();
      await load();
    } catch (err) {
      if (sessionEnded(err)) return;
      const byField = err instanceof ApiFailure ? fieldErrors(err.message) : { '': [String(err)] };
      setFormErrors({ name: byField.name ?? [], expires: byField.expires_at ?? [], form: byField[''] ?? [] });
    }
  }

  async function revoke(key: ApiKey) {
    setRevoking(null);
    try {
      await api.revokeKey(key.id);
      setMessage(`Key “${key.name || 'unnamed'}” revoked.`);
      await load();
    } catch (err) {
      fail(err);
    }
  }

  return (
    <Page title="API keys">
      <p class="lead">Programs use API keys (the X-API-Key header). A key is shown once, when it is created.</p>
      {error && <Alert>{error}</Alert>}
      {message && <Alert kind="success">{message}</Alert>}
      {created ? (
        <SecretOnce
          label="New API key"
          value={created.key}
          note="Copy this key now: it will not be shown again."
          onDone={() => setCreated(null)}
        />
      ) : (
        <form class="card inline-form" onSubmit={create}>
          {formErrors.form?.length ? <Alert>{formErrors.form.join('; ')}</Alert> : null}
          <div class="field">
            <label for="key-name">Name</label>
            <input id="key-name" name="name" maxLength={255} aria-describedby={formErrors.name?.length ? 'key-name-error' : undefined} />
            <FieldError id="key-name-error" messages={formErrors.name} />
          </div>
          <div class="field">
            <label for="key-expires">Expires (optional)</label>
            <input id="key-expires" name="expires" type="datetime-local" aria-describedby={formErrors.expires?.length ? 'key-expires-error' : undefined} />
            <FieldError id="key-expires-error" messages={formErrors.expires} />
          </div>
          <button type="submit">Create key</button>
        </form>
      )}
      {keys && keys.length === 0 && <p class="empty">No API keys.</p>}
      {keys && keys.length > 0 && (
        <div class="table-wrap">
          <table class="keys">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((key) => (
                <tr key={key.id} data-key-id={key.id}>
                  <td data-label="Name" id={`key-${key.id}`}>
                    {key.name || <span class="muted">unnamed</span>}
                  </td>
                  <td data-label="Key" class="mono">
                    {MASK}
                  </td>
                  <td data-label="Created">{formatDate(key.created_at)}</td>
                  <td data-label="Last used">{key.last_used_at ? formatDate(key.last_used_at) : 'never'}</td>
                  <td data-label="Expires">{key.expires_at ? formatDate(key.expires_at) : 'never'}</td>
                  <td>
                    <button type="button" class="danger small" aria-describedby={`key-${key.id}`} onClick={() => setRevoking(key)}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {revoking && (
        <Confirm
          title="Revoke this key?"
          message={
            <>
              Programs using “{revoking.name || 'unnamed'}” will be refused from now on. This cannot be undone.
            </>
          }
          confirmLabel="Revoke key"
          onConfirm={() => void revoke(revoking)}
          onCancel={() => setRevoking(null)}
        />
      )}
    </Page>
  );
}
