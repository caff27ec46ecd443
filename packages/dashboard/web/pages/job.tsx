import { useEffect, useState } from 'preact/hooks';
import { useApi, useFailure } from '../context';
import type { ErrorEntry, Job } from '../api';
import { Alert, Confirm, Page, ProgressBar, StatusBadge, usePoll } from '../components';
import { formatBytes, formatDate } from '../format';
import { Link, navigate } from '../router';

const RUNNING = new Set(['preparing', 'pending', 'processing']);
// A job can have 20,000 files; the page lists the first ones only.
const FILES_SHOWN = 500;

function ErrorList(props: { errors?: ErrorEntry[]; label: string }) {
  if (!props.errors?.length) return null;
  return (
    <ul class="errors" aria-label={props.label}>
      {props.errors.map((e, i) => (
        <li key={i}>
          <span class="mono break">{e.url}</span>: {e.error}
        </li>
      ))}
    </ul>
  );
}

export function JobPage(props: { id: string }) {
  const api = useApi();
  const [job, setJob] = useState<Job | null>(null);
  const { error, setError, fail } = useFailure();
  const [retryError, setRetryError] = useState<string | null>(null);
  const [fromScratch, setFromScratch] = useState(false);
  const [retrying, setRetrying] = useState(false);
  const [confirmingDelete, setConfirmingDelete] = useState(false);

  async function load() {
    try {
      setJob((await api.getJob(props.id)).job);
      setError(null);
    } catch (err) {
      fail(err);
    }
  }
  useEffect(() => {
    void load();
  }, [props.id]);
  // Live status while the job runs.
  usePoll(!!job && RUNNING.has(job.status), 1500, () => void load());

  async function retry() {
    setRetrying(true);
    setRetryError(null);
    try {
      await api.retryJob(props.id, !fromScratch);
      await load();
    } catch (err) {
      setRetryError(err instanceof Error ? err.message : String(err));
    } finally {
      setRetrying(false);
    }
  }

  async function remove() {
    setConfirmingDelete(false);
    try {
      await api.deleteJob(props.id);
      navigate('/jobs');
    } catch (err) {
      fail(err);
    }
  }

  return (
    <Page title={job ? job.zip_filename : 'Job'}>
      <p>
        <Link to="/jobs">← All jobs</Link>
      </p>
      {error && <Alert>{error}</Alert>}
      {job && (
        <>
          <dl class="facts card">
            <div>
              <dt>Status</dt>
              <dd>
                <StatusBadge status={job.status} /> {RUNNING.has(job.status) && <span class="muted">(updates live)</span>}
                {RUNNING.has(job.status) && <ProgressBar label="Job progress" value={job.progress} />}
              </dd>
            </div>
            <div>
              <dt>Job ID</dt>
              <dd class="mono break">{job.id}</dd>
            </div>
            <div>
              <dt>Files</dt>
              <dd>
                {job.file_count} packaged of {job.url_count} submitted
              </dd>
            </div>
            <div>
              <dt>Total size</dt>
              <dd>{formatBytes(job.total_size)}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatDate(job.created_at)}</dd>
            </div>
            <div>
              <dt>Finished</dt>
              <dd>{formatDate(job.completed_at)}</dd>
            </div>
            <div>
              <dt>Expires</dt>
              <dd>{formatDate(job.expires_at)}</dd>
            </div>
            <div>
              <dt>Format</dt>
              <dd>{job.format === 'tar.gz' ? `tar.gz (gzip level ${job.compression_level ?? 6})` : job.format}</dd>
            </div>
            {job.compression && (
              <div>
                <dt>Compression</dt>
                <dd>{job.compression === 'deflate' ? `deflate (level ${job.compression_level ?? 6})` : 'store'}</dd>
              </div>
            )}
            {job.encryption && (
              <div>
                <dt>Encryption</dt>
                <dd>{job.encryption.method}</dd>
              </div>
            )}
            {job.max_zip_size_bytes !== null && (
              <div>
                <dt>Split size</dt>
                <dd>
                  {formatBytes(job.max_zip_size_bytes)} ({job.split_strategy})
                </dd>
              </div>
            )}
          </dl>

          {job.status === 'failed' && (
            <div class="card retry">
              <h2>Retry</h2>
              {retryError && <Alert>{retryError}</Alert>}
              <label class="check">
                <input type="checkbox" checked={fromScratch} onChange={(e) => setFromScratch(e.currentTarget.checked)} />
                Start from scratch (otherwise completed ZIPs are kept)
              </label>
              <button type="button" onClick={retry} disabled={retrying}>
                Retry job
              </button>
            </div>
          )}

          <div class="row">
            <button type="button" class="danger small" onClick={() => setConfirmingDelete(true)}>
              Delete job
            </button>
          </div>
          {confirmingDelete && (
            <Confirm
              title="Delete this job?"
              message={<>Its ZIP files are deleted and every download link of it stops working at once. This cannot be undone.</>}
              confirmLabel="Delete job"
              onConfirm={() => void remove()}
              onCancel={() => setConfirmingDelete(false)}
            />
          )}

          <ErrorList errors={job.errors} label="Job errors" />

          <h2>ZIP files</h2>
          {job.zips.length === 0 ? (
            <p class="empty">{RUNNING.has(job.status) ? 'The ZIP layout is being prepared.' : 'No ZIP files.'}</p>
          ) : (
            <div class="table-wrap">
              <table class="zips">
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">File name</th>
                    <th scope="col">Status</th>
                    <th scope="col">Files</th>
                    <th scope="col">Size</th>
                    <th scope="col">Download</th>
                  </tr>
                </thead>
                <tbody>
                  {job.zips.map((zip) => (
                    <tr key={zip.id}>
                      <td data-label="#">{zip.sequence}</td>
                      <td data-label="File name" class="break">
                        {zip.filename}
                        <ErrorList errors={zip.errors} label={`Errors of ${zip.filename}`} />
                      </td>
                      <td data-label="Status">
                        <StatusBadge status={zip.status} />
                        {zip.status === 'processing' && zip.expected_size ? <ProgressBar label={`Progress of ${zip.filename}`} value={Math.min(1, zip.bytes_done / zip.expected_size)} /> : null}
                      </td>
                      <td data-label="Files">{zip.file_count}</td>
                      <td data-label="Size">{formatBytes(zip.size)}</td>
                      <td data-label="Download">
                        {zip.download_url ? (
                          <a href={zip.download_url} download={zip.filename} aria-label={`Download ${zip.filename}`}>
                            Download
                          </a>
                        ) : (
                          <span class="muted">—</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}

          <h2>Files ({job.files.length})</h2>
          <div class="table-wrap">
            <table class="files">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Name in the ZIP</th>
                </tr>
              </thead>
              <tbody>
                {job.files.slice(0, FILES_SHOWN).map((f, i) => (
                  <tr key={i}>
                    <td data-label="URL" class="mono break">
                      {f.url}
                    </td>
                    <td data-label="Name in the ZIP">{f.filename ?? <span class="muted">from the URL</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {job.files.length > FILES_SHOWN && (
            <p class="muted">
              The first {FILES_SHOWN} of {job.files.length} files are shown.
            </p>
          )}
          {job.metadata && Object.keys(job.metadata).length > 0 && (
            <>
              <h2>Metadata</h2>
              <dl class="facts card">
                {Object.entries(job.metadata).map(([k, v]) => (
                  <div key={k}>
                    <dt>{k}</dt>
                    <dd class="break">{String(v)}</dd>
                  </div>
                ))}
              </dl>
            </>
          )}
        </>
      )}
    </Page>
  );
}
