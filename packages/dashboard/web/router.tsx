// A small history router for the dashboard's few pages (every path under /dashboard/). The API
// answers index.html for any of them, so reloads and shared links work.
import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';

export const BASE = '/dashboard';

export interface Location {
  /** Path below /dashboard, starting with "/". */
  path: string;
  search: URLSearchParams;
}

function current(): Location {
  const raw = window.location.pathname;
  const path = raw.startsWith(BASE) ? raw.slice(BASE.length) || '/' : raw;
  return { path, search: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();

/** Goes to a dashboard path ("/jobs?status=failed"). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = BASE + to;
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return loc;
}

/** Matches "/jobs/:id" against a path; returns the parameters or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.replace(/\/+$/, '').split('/');
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) params[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
    else if (p[i] !== s[i]) return null;
  }
  return params;
}

export const LocationContext = createContext<Location>({ path: '/', search: new URLSearchParams() });
export const useRoute = () => useContext(LocationContext);

/** An <a> that navigates inside the app (a modified click still opens a new tab). */
export function Link(props: { to: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' | undefined }) {
  const { to, children, ...rest } = props;
  return (
    <a
      href={BASE + to}
      {...rest}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}
