import { createContext } from 'preact';
import { useContext, useState } from 'preact/hooks';
import { ApiFailure, type Api } from './api';

export const ApiContext = createContext<Api | null>(null);
export const useApi = (): Api => useContext(ApiContext)!;

/**
 * A page's error message and `fail`, which shows what a call threw. A 401 shows nothing here:
 * the API adapter has already ended the session and the app returns to the login page.
 */
export function useFailure(): { error: string | null; setError(message: string | null): void; fail(err: unknown): void } {
  const [error, setError] = useState<string | null>(null);
  const fail = (err: unknown) => {
    if (err instanceof ApiFailure && err.status === 401) return;
    setError(err instanceof Error ? err.message : String(err));
  };
  return { error, setError, fail };
}
