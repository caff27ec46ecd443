import { render } from 'preact';
import { useMemo, useRef, useState, useEffect } from 'preact/hooks';
import { createApi } from './api';
import { ApiContext } from './context';
import { BASE, Link, LocationContext, match, navigate, useLocation } from './router';
import { LoginPage } from './pages/login';
import { JobsPage } from './pages/jobs';
import { JobPage } from './pages/job';
import { NewJobPage } from './pages/new-job';
import { KeysPage } from './pages/keys';
import { WebhooksPage } from './pages/webhooks';
import { SourcesPage } from './pages/sources';
import { UsagePage } from './pages/usage';
import './styles.css';

// The session JWT lives in sessionStorage: this tab only, gone when it closes, never a cookie
// and never in a URL.
const TOKEN_KEY = 'archive-packager.session';

const NAV = [
  { to: '/jobs', label: 'Jobs' },
  { to: '/jobs/new', label: 'New job' },
  { to: '/keys', label: 'API keys' },
  { to: '/webhooks', label: 'Webhooks' },
  { to: '/sources', label: 'Sources' },
  { to: '/usage', label: 'Usage' },
];

function App() {
  const loc = useLocation();
  const [token, setToken] = useState<string | null>(() => sessionStorage.getItem(TOKEN_KEY));
  const [notice, setNotice] = useState<string | null>(null);
  const tokenRef = useRef(token);
  tokenRef.current = token;

  const endSession = (message: string) => {
    sessionStorage.removeItem(TOKEN_KEY);
    tokenRef.current = null;
    setToken(null);
    setNotice(message);
    navigate('/login', { replace: true });
  };

  const api = useMemo(
    () =>
      createApi({
        token: () => tokenRef.current,
        onExpired: () => endSession('Your session has expired. Log in again.'),
      }),
    [],
  );

  const loggedIn = token !== null;
  const atLogin = loc.path === '/login';
  useEffect(() => {
    if (!loggedIn && !atLogin) navigate('/login', { replace: true });
    else if (loggedIn && (atLogin || loc.path === '/')) navigate('/jobs', { replace: true });
  }, [loggedIn, atLogin, loc.path]);

  function onLogin(newToken: string) {
    sessionStorage.setItem(TOKEN_KEY, newToken);
    tokenRef.current = newToken;
    setToken(newToken);
    setNotice(null);
    navigate('/jobs', { replace: true });
  }

  let page;
  let params: Record<string, string> | null;
  if (!loggedIn || atLogin) page = <LoginPage onLogin={onLogin} notice={notice} />;
  else if (loc.path === '/jobs' || loc.path === '/') page = <JobsPage />;
  else if (match('/jobs/new', loc.path)) page = <NewJobPage />;
  else if ((params = match('/jobs/:id', loc.path))) page = <JobPage id={params.id!} />;
  else if (match('/keys', loc.path)) page = <KeysPage />;
  else if (match('/webhooks', loc.path)) page = <WebhooksPage />;
  else if (match('/sources', loc.path)) page = <SourcesPage />;
  else if (match('/usage', loc.path)) page = <UsagePage />;
  else
    page = (
      <section class="page">
        <h1>Page not found</h1>
        <p>
          There is no page at <code>{BASE + loc.path}</code>. <Link to="/jobs">Go to your jobs</Link>.
        </p>
      </section>
    );

  const current = (to: string) => (to === '/jobs' ? loc.path === '/jobs' || /^\/jobs\/(?!new)/.test(loc.path) : loc.path === to);

  return (
    <ApiContext.Provider value={api}>
      <LocationContext.Provider value={loc}>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <span class="brand">Archive packager</span>
          {loggedIn && !atLogin && (
            <nav aria-label="Main">
              <ul>
                {NAV.map((item) => (
                  <li key={item.to}>
                    <Link to={item.to} aria-current={current(item.to) ? 'page' : undefined}>
                      {item.label}
                    </Link>
                  </li>
                ))}
              </ul>
              <button type="button" class="link-button" onClick={() => endSession('You have logged out.')}>
                Log out
              </button>
            </nav>
          )}
        </header>
        <main id="main">{page}</main>
      </LocationContext.Provider>
    </ApiContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
