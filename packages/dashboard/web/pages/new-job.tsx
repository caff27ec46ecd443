import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useApi } from '../context';
import { ApiFailure, sessionEnded, type JobCreate, type Mode, type Source } from '../api';
import { Alert, FieldError, Page } from '../components';
import { fieldErrors } from '../format';
import { navigate } from '../router';
import { formatBytes, parseSize } from '@ap/contract/sizes';
import { parseUrlList } from '@ap/contract/url-list';


// Which form field shows the API's message for each request field.
/** The smallest `max_zip_size_bytes` (docs/api.md#limits). */
const SPLIT_MIN = formatBytes(104_857_600);
const FIELD_OF: Record<string, string> = {
  files: 'urls',
  mode: 'mode',
  max_zip_size_bytes: 'split',
  zip_filename: 'template',
  compression: 'compression',
  compression_level: 'compression',
  encryption: 'password',
  format: 'format',
  manifest: 'format',
};
/** The archive password's length in characters (code points, as the API counts). */
const PASSWORD_CHARS = { min: 8, max: 128 };
const LEVELS = [1, 2, 3, 4, 5, 6, 7, 8, 9];

export function NewJobPage() {
  const api = useApi();
  const [urls, setUrls] = useState('');
  const [mode, setMode] = useState<Mode>('stored');
  const [split, setSplit] = useState('');
  const [template, setTemplate] = useState('');
  const [deflate, setDeflate] = useState(false);
  const [level, setLevel] = useState(6);
  const [password, setPassword] = useState('');
  const [format, setFormat] = useState<'zip' | 'tar' | 'tar.gz'>('zip');
  const [manifest, setManifest] = useState(false);
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [busy, setBusy] = useState(false);
  const [sources, setSources] = useState<Source[]>([]);
  const [source, setSource] = useState('');
  const [destination, setDestination] = useState('');
  useEffect(() => {
    api.listSources().then((r) => setSources(r.sources), () => setSources([]));
  }, []);

  async function loadFile(file: File | undefined) {
    if (!file) return;
    const text = await file.text();
    setUrls((current) => (current.trim() ? `${current.trimEnd()}\n${text}` : text));
  }

  async function submit(e: SubmitEvent) {
    e.preventDefault();
    const entries = parseUrlList(urls);
    if (entries.some((e) => e.url.startsWith('s3://')) && !source) return setErrors({ source: ['choose the source whose credentials read the s3:// lines'] });
    // s3:// lines are read with the chosen source's credentials.
    const body: JobCreate = { files: entries.map((e) => (e.url.startsWith('s3://') ? { ...e, source } : e)), mode };
    if (template.trim() !== '') body.zip_filename = template.trim();
    // The ZIPs go to the customer's bucket, written with the same source (stored jobs only).
    if (destination.trim() !== '') {
      const m = /^s3:\/\/([^/]+)\/?(.*)$/s.exec(destination.trim());
      if (!m || !source) return setErrors({ destination: ['enter s3://bucket or s3://bucket/prefix, and choose the source that writes it'] });
      body.destination = { source, bucket: m[1]!, ...(m[2] ? { prefix: m[2] } : {}) };
    }
    // Deflate is for stored ZIPs only (a stream ZIP's size is known before its files are read);
    // a tar.gz (stored only) is gzipped whole at the chosen level.
    if (format !== 'zip') body.format = format;
    if (format === 'tar.gz') body.compression_level = level;
    else if (deflate && mode === 'stored' && format === 'zip') Object.assign(body, { compression: 'deflate', compression_level: level });
    if (manifest && mode === 'stored') body.manifest = true;
    if (password !== '') {
      const chars = [...password].length;
      if (chars < PASSWORD_CHARS.min || chars > PASSWORD_CHARS.max) {
        setErrors({ password: [`must be ${PASSWORD_CHARS.min} to ${PASSWORD_CHARS.max} characters (got ${chars}), or empty for no encryption`] });
        return;
      }
      body.encryption = { method: 'aes-256', password };
    }
    if (split.trim() !== '') {
      const size = parseSize(split);
      if (size === null || size <= 0) {
        setErrors({ split: [`enter a size such as 500 MB or 2 GB (at least ${SPLIT_MIN}), or leave it empty for one ZIP`] });
        return;
      }
      body.max_zip_size_bytes = size;
    }
    setBusy(true);
    setErrors({});
    try {
      const { job_id } = await api.createJob(body);
      navigate(`/jobs/${job_id}`);
    } catch (err) {
      setBusy(false);
      if (!(err instanceof ApiFailure)) return setErrors({ form: [String(err)] });
      if (sessionEnded(err)) return;
      // Validation messages go beside their field; anything else above the form.
      const byField: Record<string, string[]> = {};
      for (const [field, messages] of Object.entries(err.code === 'INVALID_REQUEST' ? fieldErrors(err.message) : { '': [err.message] })) {
        const target = FIELD_OF[field] ?? 'form';
        byField[target] = [...(byField[target] ?? []), ...messages.map((m) => (FIELD_OF[field] || !field ? m : `${field}: ${m}`))];
      }
      setErrors(byField);
    }
  }

  const described = (field: string, hint: string) => (errors[field] ? `${hint} ${field}-error` : hint);
  const count = parseUrlList(urls).length;

  return (
    <Page title="New job">
      {errors.form && <Alert>{errors.form.join('; ')}</Alert>}
      <form class="card" onSubmit={submit} noValidate>
        <div class="field">
          <label for="urls">URLs</label>
          <p class="hint" id="urls-hint">
            One URL per line, optionally followed by a space and the file's name in the ZIP; lines starting with # are skipped; <code>s3://bucket/key</code> lines are read with the source below, and an <code>s3://bucket/folder/</code> line (ending in <code>/</code>) adds every object under it, in a folder of that name. {count > 0 && `${count} ${count === 1 ? 'URL' : 'URLs'}.`}
          </p>
          <textarea
            id="urls"
            name="urls"
            rows={8}
            class="mono"
            spellcheck={false}
            value={urls}
            onInput={(e) => setUrls(e.currentTarget.value)}
            aria-invalid={errors.urls ? 'true' : undefined}
            aria-describedby={described('urls', 'urls-hint')}
          />
          <FieldError id="urls-error" messages={errors.urls} />
        </div>
        <div class="field">
          <label for="url-file">Text file of URLs</label>
          <p class="hint" id="url-file-hint">
            Adds its lines to the list above.
          </p>
          <input id="url-file" type="file" accept=".txt,.csv,text/plain" aria-describedby="url-file-hint" onChange={(e) => void loadFile(e.currentTarget.files?.[0])} />
        </div>
        <div class="field">
          <label for="source">Source for s3:// lines</label>
          <p class="hint" id="source-hint">
            The bucket credentials (Sources page) that read (and list) every <code>s3://</code> line.
          </p>
          <select id="source" name="source" value={source} onChange={(e) => setSource(e.currentTarget.value)} aria-describedby={described('source', 'source-hint')}>
            <option value="">None</option>
            {sources.map((s) => (
              <option key={s.id} value={s.name}>
                {s.name}
              </option>
            ))}
          </select>
          <FieldError id="source-error" messages={errors.source} />
        </div>
        <div class="field">
          <label for="destination">Destination bucket (optional)</label>
          <p class="hint" id="destination-hint">
            <code>s3://bucket/prefix</code>: the ZIPs are written there with the source above, instead of being kept here (stored jobs).
          </p>
          <input id="destination" name="destination" value={destination} onInput={(e) => setDestination(e.currentTarget.value)} aria-describedby={described('destination', 'destination-hint')} />
          <FieldError id="destination-error" messages={errors.destination} />
        </div>
        <fieldset class="field">
          <legend>Mode</legend>
          <label class="check">
            <input type="radio" name="mode" value="stored" checked={mode === 'stored'} onChange={() => setMode('stored')} />
            Stored: built once and kept until it expires
          </label>
          <label class="check">
            <input
              type="radio"
              name="mode"
              value="stream"
              checked={mode === 'stream'}
              onChange={() => {
                setMode('stream');
                setDeflate(false);
              }}
            />
            Stream: built while it downloads
          </label>
          <FieldError id="mode-error" messages={errors.mode} />
        </fieldset>
        <fieldset class="field">
          <legend>Format</legend>
          <label for="format">Archive format</label>
          <select id="format" name="format" value={format} onChange={(e) => setFormat(e.currentTarget.value as 'zip' | 'tar' | 'tar.gz')}>
            <option value="zip">ZIP</option>
            <option value="tar">tar (both modes)</option>
            <option value="tar.gz" disabled={mode !== 'stored'}>
              tar.gz (stored mode only; the level below)
            </option>
          </select>
          <label class="check">
            <input type="checkbox" name="manifest" checked={manifest} disabled={mode !== 'stored'} onChange={(e) => setManifest(e.currentTarget.checked)} />
            Add manifest.csv: each file's name, size, SHA-256 and URL, and each URL left out (stored mode only)
          </label>
          <FieldError id="format-error" messages={errors.format} />
        </fieldset>
        <fieldset class="field">
          <legend>Compression</legend>
          <label class="check">
            <input type="radio" name="compression" value="store" checked={!deflate} onChange={() => setDeflate(false)} />
            Store: no compression (fastest; right for photos, video and other compressed files)
          </label>
          <label class="check">
            <input type="radio" name="compression" value="deflate" checked={deflate} disabled={mode !== 'stored'} onChange={() => setDeflate(true)} />
            Deflate: smaller ZIPs of text and other compressible files (stored mode only)
          </label>
          {(deflate || format === 'tar.gz') && (
            <>
              <label for="level">{format === 'tar.gz' ? 'gzip level' : 'Deflate level'}</label>
              <select id="level" name="level" value={String(level)} onChange={(e) => setLevel(Number(e.currentTarget.value))}>
                {LEVELS.map((n) => (
                  <option key={n} value={String(n)}>
                    {n}
                    {n === 1 ? ' (fastest)' : n === 6 ? ' (default)' : n === 9 ? ' (smallest)' : ''}
                  </option>
                ))}
              </select>
            </>
          )}
          <FieldError id="compression-error" messages={errors.compression} />
        </fieldset>
        <TextField id="password" label="Archive password" type="password" autocomplete="new-password" value={password} onValue={setPassword} errors={errors.password}>
          Optional, {PASSWORD_CHARS.min} to {PASSWORD_CHARS.max} characters: every file is encrypted with AES-256. Open such ZIPs with 7-Zip, WinZip or The Unarchiver (Windows Explorer and macOS Archive Utility cannot). The password is never shown again.
        </TextField>
        <TextField id="split" label="Split size" value={split} onValue={setSplit} errors={errors.split}>
          Empty for one ZIP; otherwise each ZIP is at most this size, such as 500 MB or 2 GB (at least {SPLIT_MIN}).
        </TextField>
        <TextField id="template" label="Name template" mono value={template} onValue={setTemplate} errors={errors.template}>
          The ZIP's file name, e.g. <code>photos-{'{n}'}-of-{'{total}'}.zip</code> or <code>{'{date}'}-backup.zip</code>. Empty: archive-&lt;job id&gt;.zip.
        </TextField>
        <button type="submit" disabled={busy}>
          Create job
        </button>
      </form>
    </Page>
  );
}

/** A one-line input with its label, hint (the children) and the API's messages for it. */
function TextField(props: {
  id: string;
  label: string;
  value: string;
  onValue: (value: string) => void;
  errors: string[] | undefined;
  type?: 'text' | 'password';
  mono?: boolean;
  autocomplete?: string;
  children: ComponentChildren;
}) {
  const { id, errors } = props;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <p class="hint" id={`${id}-hint`}>
        {props.children}
      </p>
      <input
        id={id}
        name={id}
        // Preact's input types are a union keyed on `type`: one of two, both plain text inputs here.
        type={(props.type ?? 'text') as 'text'}
        class={props.mono ? 'mono' : undefined}
        autocomplete={props.autocomplete}
        value={props.value}
        onInput={(e) => props.onValue(e.currentTarget.value)}
        aria-invalid={errors ? 'true' : undefined}
        aria-describedby={errors ? `${id}-hint ${id}-error` : `${id}-hint`}
      />
      <FieldError id={`${id}-error`} messages={errors} />
    </div>
  );
}
