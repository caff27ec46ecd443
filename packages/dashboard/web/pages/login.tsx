import { useState } from 'preact/hooks';
import { useApi } from '../context';
import { ApiFailure } from '../api';
import { Alert, Page } from '../components';

export function LoginPage(props: { onLogin: (token: string) => void; notice: string | null }) {
  const api = useApi();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: SubmitEvent) {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    setBusy(true);
    setError(null);
    try {
      const { token } = await api.login(String(form.get('email') ?? ''), String(form.get('password') ?? ''));
      props.onLogin(token);
    } catch (err) {
      setError(err instanceof ApiFailure ? err.message : String(err));
      setBusy(false);
    }
  }

  return (
    <Page title="Log in">
      <div class="narrow">
        {props.notice && <Alert kind="info">{props.notice}</Alert>}
        {error && <Alert>{error}</Alert>}
        <form class="card" onSubmit={submit}>
          <div class="field">
            <label for="email">Email</label>
            <input id="email" name="email" type="email" autoComplete="username" required />
          </div>
          <div class="field">
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autoComplete="current-password" required />
          </div>
          <button type="submit" disabled={busy}>
            Log in
          </button>
        </form>
      </div>
    </Page>
  );
}
