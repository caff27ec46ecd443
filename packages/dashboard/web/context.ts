import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Api } from './api';

export const ApiContext = createContext<Api | null>(null);
export const useApi = (): Api => useContext(ApiContext)!;
