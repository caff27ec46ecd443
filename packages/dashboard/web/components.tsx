import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { JobStatus, ZipStatus } from './api';

/** A page: sets the document title and moves focus to the heading when it opens (screen readers hear the new page). */
export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${props.title} · Archive packager`;
    heading.current?.focus({ preventScroll: true });
  }, [props.title]);
  return (
    <section class="page">
      <div class="page-head">
        <h1 tabIndex={-1} ref={heading}>
          {props.title}
        </h1>
        {props.actions && <div class="page-actions">{props.actions}</div>}
      </div>
      {props.children}
    </section>
  );
}

export function Alert(props: { kind?: 'error' | 'info' | 'success'; children: ComponentChildren }) {
  const kind = props.kind ?? 'error';
  return (
    <div class={`alert alert-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </div>
  );
}

export function StatusBadge(props: { status: JobStatus | ZipStatus | string }) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

/** A secret shown once: a read-only field with a Copy button. */
export function SecretOnce(props: { label: string; value: string; note: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  async function copy() {
    try {
      await navigator.clipboard.writeText(props.value);
    } catch {
      // No clipboard API (an insecure origin): select the text so the user can copy it.
      input.current?.select();
      document.execCommand('copy');
    }
    setCopied(true);
  }
  return (
    <div class="secret" role="region" aria-labelledby="secret-note">
      <p class="secret-note" id="secret-note">
        {props.note}
      </p>
      <label for="secret-value">{props.label}</label>
      <div class="secret-row">
        <input id="secret-value" ref={input} class="mono" readOnly value={props.value} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p class="secret-status" role="status">
        {copied ? 'Copied to the clipboard.' : ''}
      </p>
      <button type="button" class="secondary" onClick={props.onDone}>
        Done
      </button>
    </div>
  );
}

/** A modal confirmation (<dialog>): Escape or Cancel closes it without acting. */
export function Confirm(props: { title: string; message: ComponentChildren; confirmLabel: string; onConfirm: () => void; onCancel: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby="confirm-title" onCancel={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <p>{props.message}</p>
      <div class="row">
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel} autoFocus>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

/** Calls `tick` every `ms` while `active`, and stops when the page is left. */
export function usePoll(active: boolean, ms: number, tick: () => void) {
  const saved = useRef(tick);
  saved.current = tick;
  useEffect(() => {
    if (!active) return;
    const timer = window.setInterval(() => saved.current(), ms);
    return () => window.clearInterval(timer);
  }, [active, ms]);
}

export function FieldError(props: { id: string; messages?: string[] }) {
  if (!props.messages?.length) return null;
  return (
    <p class="field-error" id={props.id}>
      {props.messages.join('; ')}
    </p>
  );
}

/** A running job's or ZIP's share of bytes written (docs/fair-share.md#progress-of-a-job); nothing when unknown. */
export function ProgressBar(props: { label: string; value: number | null }) {
  if (props.value === null) return null;
  const percent = Math.round(props.value * 100);
  return (
    <span class="progress">
      <progress max={1} value={props.value} aria-label={props.label} /> <span class="muted">{percent}%</span>
    </span>
  );
}
