import { useEffect, useState } from 'preact/hooks';
import { useApi } from '../context';
import { sessionEnded, type JobStats, type Usage } from '../api';
import { Alert, Page } from '../components';
import { formatBytes, formatNumber } from '../format';

function Bar(props: { label: string; used: number; quota: number; show: (n: number) => string }) {
  const ratio = props.quota > 0 ? props.used / props.quota : 0;
  const percent = Math.round(ratio * 1000) / 10;
  const id = props.label.replace(/\W+/g, '-').toLowerCase();
  return (
    <div class="bar">
      <div class="bar-head">
        <span id={id}>{props.label}</span>
        <span>
          {props.show(props.used)} of {props.show(props.quota)} ({percent}%)
        </span>
      </div>
      <div
        class={`bar-track${ratio >= 1 ? ' over' : ratio >= 0.8 ? ' near' : ''}`}
        role="meter"
        aria-labelledby={id}
        aria-valuemin={0}
        aria-valuemax={props.quota}
        aria-valuenow={props.used}
        aria-valuetext={`${percent}% used`}
      >
        <div class="bar-fill" style={{ width: `${Math.min(100, ratio * 100)}%` }} />
      </div>
    </div>
  );
}

const STATUSES = ['preparing', 'pending', 'processing', 'completed', 'failed'] as const;

export function UsagePage() {
  const api = useApi();
  const [usage, setUsage] = useState<Usage | null>(null);
  const [stats, setStats] = useState<JobStats | null>(null);
  const [errors, setErrors] = useState<string[]>([]);

  useEffect(() => {
    const fail = (err: unknown) => {
      if (sessionEnded(err)) return;
      setErrors((e) => [...e, err instanceof Error ? err.message : String(err)]);
    };
    api.usage().then((r) => setUsage(r.usage), fail);
    api.jobStats().then((r) => setStats(r.stats), fail);
  }, []);

  const period = usage && `${new Date(usage.period_start).toLocaleDateString(undefined, { timeZone: 'UTC', dateStyle: 'medium' })} – ${new Date(usage.period_end).toLocaleDateString(undefined, { timeZone: 'UTC', dateStyle: 'medium' })} (UTC)`;
  const maxCount = stats ? Math.max(1, ...STATUSES.map((s) => stats[s])) : 1;

  return (
    <Page title="Usage">
      {errors.map((e, i) => (
        <Alert key={i}>{e}</Alert>
      ))}
      {usage && (
        <div class="card">
          <h2>This month</h2>
          <p>
            Plan <strong class="plan">{usage.plan}</strong> · {period} · overage {usage.overage_enabled ? 'enabled' : 'disabled'}
          </p>
          <Bar label="Stream downloads" used={usage.stream_bytes} quota={usage.stream_quota_bytes} show={formatBytes} />
          <Bar label="Stored archives" used={usage.stored_gb_days} quota={usage.stored_quota_gb_days} show={(n) => `${formatNumber(n, 2)} GB-days`} />
        </div>
      )}
      {stats && (
        <div class="card">
          <h2>Jobs by status</h2>
          <p class="muted">{stats.total} jobs in total</p>
          <dl class="chart">
            {STATUSES.map((s) => (
              <div key={s} class="chart-row">
                <dt>{s}</dt>
                <dd>
                  <span class={`chart-bar badge-${s}`} style={{ width: `${(stats[s] / maxCount) * 100}%` }} />
                  <span class="chart-value">{stats[s]}</span>
                </dd>
              </div>
            ))}
          </dl>
        </div>
      )}
    </Page>
  );
}
