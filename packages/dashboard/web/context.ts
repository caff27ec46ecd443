import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { sessionEnded, type Api } from './api';

export const ApiContext = createContext<Api | null>(null);
export const useApi = (): Api => useContext(ApiContext)!;

/** A page's error message and `fail`, which shows what a call threw (nothing once the session ended). */
export function useFailure(): { error: string | null; setError(message: string | null): void; fail(err: unknown): void } {
  const [error, setError] = useState<string | null>(null);
  const fail = (err: unknown) => {
    if (sessionEnded(err)) return;
    setError(err instanceof Error ? err.message : String(err));
  };
  return { error, setError, fail };
}

/** A list the page loads when it mounts, and `load` to read it again after a change; failures go to `fail`. */
export function useLoadedList<T>(read: () => Promise<T[]>, fail: (err: unknown) => void): [T[] | null, () => Promise<void>] {
  const [items, setItems] = useState<T[] | null>(null);
  async function load() {
    try {
      setItems(await read());
    } catch (err) {
      fail(err);
    }
  }
  useEffect(() => void load(), []);
  return [items, load];
}
