import { useEffect, useState } from 'preact/hooks';
import { useApi } from '../context';
import { ApiFailure, sessionEnded, type JobCreate, type Mode, type Source } from '../api';
import { Alert, FieldError, Page } from '../components';
import { fieldErrors } from '../format';
import { navigate } from '../router';
import { formatBytes, parseSize } from '@ap/contract/sizes';
import { parseUrlList } from '@ap/contract/url-list';


// Which form field shows the API's message for each request field.
/** The smallest `max_zip_size_bytes` (api.md). */
const SPLIT_MIN = formatBytes(104_857_600);
const FIELD_OF: Record<string, string> = { files: 'urls', mode: 'mode', max_zip_size_bytes: 'split', zip_filename: 'template' };

export function NewJobPage() {
  const api = useApi();
  const [urls, setUrls] = useState('');
  const [mode, setMode] = useState<Mode>('stored');
  const [split, setSplit] = useState('');
  const [template, setTemplate] = useState('');
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [busy, setBusy] = useState(false);
  const [sources, setSources] = useState<Source[]>([]);
  const [source, setSource] = useState('');
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
            One URL per line, optionally followed by a space and the file's name in the ZIP; lines starting with # are skipped; <code>s3://bucket/key</code> lines are read with the source below. {count > 0 && `${count} ${count === 1 ? 'URL' : 'URLs'}.`}
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
            The bucket credentials (Sources page) that read every <code>s3://bucket/key</code> line.
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
        <fieldset class="field">
          <legend>Mode</legend>
          <label class="check">
            <input type="radio" name="mode" value="stored" checked={mode === 'stored'} onChange={() => setMode('stored')} />
            Stored: built once and kept until it expires
          </label>
          <label class="check">
            <input type="radio" name="mode" value="stream" checked={mode === 'stream'} onChange={() => setMode('stream')} />
            Stream: built while it downloads
          </label>
          <FieldError id="mode-error" messages={errors.mode} />
        </fieldset>
        <div class="field">
          <label for="split">Split size</label>
          <p class="hint" id="split-hint">
            Empty for one ZIP; otherwise each ZIP is at most this size, such as 500 MB or 2 GB (at least {SPLIT_MIN}).
          </p>
          <input
            id="split"
            name="split"
            type="text"
            value={split}
            onInput={(e) => setSplit(e.currentTarget.value)}
            aria-invalid={errors.split ? 'true' : undefined}
            aria-describedby={described('split', 'split-hint')}
          />
          <FieldError id="split-error" messages={errors.split} />
        </div>
        <div class="field">
          <label for="template">Name template</label>
          <p class="hint" id="template-hint">
            The ZIP's file name, e.g. <code>photos-{'{n}'}-of-{'{total}'}.zip</code> or <code>{'{date}'}-backup.zip</code>. Empty: archive-&lt;job id&gt;.zip.
          </p>
          <input
            id="template"
            name="template"
            type="text"
            class="mono"
            value={template}
            onInput={(e) => setTemplate(e.currentTarget.value)}
            aria-invalid={errors.template ? 'true' : undefined}
            aria-describedby={described('template', 'template-hint')}
          />
          <FieldError id="template-error" messages={errors.template} />
        </div>
        <button type="submit" disabled={busy}>
          Create job
        </button>
      </form>
    </Page>
  );
}
