import { useEffect, useState } from 'preact/hooks';
import { useApi, useFailure } from '../context';
import type { JobListItem, PageMeta } from '../api';
import { Alert, Page, ProgressBar, StatusBadge, usePoll } from '../components';
import { formatBytes, formatDate } from '../format';
import { Link, navigate, useRoute } from '../router';

const FILTERS = ['pending', 'processing', 'completed', 'failed'] as const;
const RUNNING = new Set(['preparing', 'pending', 'processing']);
const PAGE_SIZE = 20;

export function JobsPage() {
  const { search } = useRoute();
  const status = search.get('status') ?? '';
  return (
    <Page
      title="Jobs"
      actions={
        <Link to="/jobs/new" class="button">
          Create a job
        </Link>
      }
    >
      <div class="toolbar">
        <label for="status-filter">Status</label>
        <select
          id="status-filter"
          value={status}
          onChange={(e) => {
            const value = e.currentTarget.value;
            navigate(value ? `/jobs?status=${value}` : '/jobs');
          }}
        >
          <option value="">All</option>
          {FILTERS.map((f) => (
            <option key={f} value={f}>
              {f}
            </option>
          ))}
        </select>
      </div>
      {/* A new filter starts from its first page. */}
      <JobList key={status} status={status} />
    </Page>
  );
}

function JobList({ status }: { status: string }) {
  const api = useApi();
  // Cursors of the pages up to this one (the first page has none), so "Previous page" works.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const [jobs, setJobs] = useState<JobListItem[] | null>(null);
  const [meta, setMeta] = useState<PageMeta | null>(null);
  const { error, setError, fail } = useFailure();

  async function load() {
    try {
      const res = await api.listJobs({ status: status || undefined, cursor, limit: PAGE_SIZE });
      setJobs(res.jobs);
      setMeta(res.meta);
      setError(null);
    } catch (err) {
      fail(err);
    }
  }

  useEffect(() => {
    void load();
  }, [cursor]);

  // Live status: refresh this page while any job on it is still running.
  usePoll(!!jobs?.some((j) => RUNNING.has(j.status)), 2000, () => void load());

  return (
    <>
      {meta && (
        <p class="muted" aria-live="polite">
          {meta.total} {meta.total === 1 ? 'job' : 'jobs'}
          {status ? ` ${status}` : ''}
        </p>
      )}
      {error && <Alert>{error}</Alert>}
      {jobs && jobs.length === 0 && <p class="empty">{status ? `No ${status} jobs.` : 'No jobs yet.'}</p>}
      {jobs && jobs.length > 0 && (
        <div class="table-wrap">
          <table class="jobs">
            <caption class="visually-hidden">Your jobs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Archive</th>
                <th scope="col">Status</th>
                <th scope="col">Files</th>
                <th scope="col">Size</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {jobs.map((job) => (
                <tr key={job.id} data-job-id={job.id}>
                  <td data-label="Archive">
                    <Link to={`/jobs/${job.id}`}>{job.zip_filename}</Link>
                    {job.multi_zip && <span class="muted"> ({job.zip_count} ZIPs)</span>}
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={job.status} />
                    {job.status === 'processing' && <ProgressBar label={`Progress of job ${job.id}`} value={job.progress} />}
                  </td>
                  <td data-label="Files">
                    {job.status === 'completed' ? `${job.file_count} of ${job.url_count}` : job.url_count}
                  </td>
                  <td data-label="Size">{job.status === 'completed' ? formatBytes(job.total_size) : '—'}</td>
                  <td data-label="Created">{formatDate(job.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="pager">
        <button type="button" class="secondary" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <button type="button" class="secondary" disabled={!meta?.has_more} onClick={() => meta?.next_cursor && setCursors([...cursors, meta.next_cursor])}>
          Next page
        </button>
      </div>
    </>
  );
}
