// deploy/monitoring (Prometheus alert rules, the Grafana dashboard) and the KEDA trigger in
// k8s/packer.yaml query metrics by name. Every name and label they use must be one the
// services export, or a panel stays empty and an alert never fires.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { metrics } from '@ap/service-kit';

// The decided names and labels (docs/operations.md#the-rules, from the contract); the test
// below holds the services' own registry (packages/service-kit/src/metrics.ts) to exactly this list.
const DECIDED_METRICS: Record<string, { labels: string[]; histogram?: true }> = {
  archive_http_requests_total: { labels: ['method', 'route', 'status'] },
  archive_http_request_duration_seconds: { labels: ['method', 'route', 'status'], histogram: true },
  archive_jobs_created_total: { labels: ['mode'] },
  archive_queue_jobs: { labels: ['queue', 'state'] },
  archive_bins_total: { labels: ['result'] },
  archive_bin_duration_seconds: { labels: [], histogram: true },
  archive_bytes_fetched_total: { labels: ['service'] },
  archive_bytes_uploaded_total: { labels: [] },
  archive_stream_bytes_sent_total: { labels: [] },
  archive_fetch_errors_total: { labels: ['reason'] },
  archive_webhook_deliveries_total: { labels: ['result'] },
  archive_bytes_copied_server_side_total: { labels: [] },
  archive_segments_total: { labels: ['result'] },
  // prom-client's default metrics (collectDefaults), which every service exports too.
  process_cpu_seconds_total: { labels: [] },
  process_resident_memory_bytes: { labels: [] },
  process_start_time_seconds: { labels: [] },
  nodejs_eventloop_lag_p99_seconds: { labels: [] },
  nodejs_heap_size_used_bytes: { labels: [] },
  // Prometheus's own series for each scrape target.
  up: { labels: [] },
};
/** Labels Prometheus adds to every series (deploy/monitoring/prometheus-scrape.yaml). */
const TARGET_LABELS = ['job', 'instance', 'component', 'namespace', 'pod', 'le'];
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'];

const root = new URL('../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, root), 'utf8');

/** Base metric name of a series name (a histogram's _bucket/_sum/_count included). */
function metricOf(series: string): string | undefined {
  if (DECIDED_METRICS[series]) return series;
  const base = series.replace(/_(bucket|sum|count)$/, '');
  return DECIDED_METRICS[base]?.histogram ? base : undefined;
}

/**
 * The series a PromQL expression selects: every metric-like name (our prefixes, `up`) with the
 * labels of its selector, if any.
 */
function selectors(expr: string): { name: string; labels: string[] }[] {
  const found: { name: string; labels: string[] }[] = [];
  for (const m of expr.matchAll(/\b((?:archive|process|nodejs)_[a-z0-9_]+|up)\b(\{([^}]*)\})?/g)) {
    const labels = [...(m[3] ?? '').matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]!);
    found.push({ name: m[1]!, labels });
  }
  return found;
}

function checkExpr(expr: string, where: string): string[] {
  const problems: string[] = [];
  const used = selectors(expr);
  if (used.length === 0) problems.push(`${where}: uses no metric`);
  for (const { name, labels } of used) {
    const metric = metricOf(name);
    if (!metric) {
      problems.push(`${where}: ${name} is not a decided metric`);
      continue;
    }
    for (const label of labels) {
      if (!DECIDED_METRICS[metric]!.labels.includes(label) && !TARGET_LABELS.includes(label)) problems.push(`${where}: ${name} has no label ${label}`);
    }
  }
  // Labels grouped by must belong to one of the metrics the expression uses.
  const usable = new Set([...TARGET_LABELS, ...used.flatMap(({ name }) => DECIDED_METRICS[metricOf(name) ?? '']?.labels ?? [])]);
  for (const m of expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)) {
    for (const label of m[1]!.split(',').map((l) => l.trim())) if (!usable.has(label)) problems.push(`${where}: grouped by ${label}, which no metric used has`);
  }
  for (const m of expr.matchAll(/state(?:=|=~)"([^"]*)"/g)) {
    for (const state of m[1]!.split('|')) if (!QUEUE_STATES.includes(state)) problems.push(`${where}: no queue state ${state}`);
  }
  return problems;
}

describe('the decided metrics', () => {
  it('are exactly what the services register, with the same labels', () => {
    const registered = new Map(
      metrics.metricsRegistry.getMetricsAsArray().map((m) => {
        const metric = m as unknown as { name: string; labelNames: string[] };
        return [metric.name, [...(metric.labelNames ?? [])].sort()];
      }),
    );
    const ours = (names: Iterable<string>) => [...names].filter((n) => n.startsWith('archive_')).sort();
    expect(ours(registered.keys())).toEqual(ours(Object.keys(DECIDED_METRICS)));
    for (const name of Object.keys(DECIDED_METRICS)) {
      if (name === 'up') continue; // Prometheus's own
      expect({ name, labels: registered.get(name) }).toEqual({ name, labels: [...DECIDED_METRICS[name]!.labels].sort() });
    }
  });
});

describe('the metric check', () => {
  it('finds names and labels that were not decided', () => {
    expect(checkExpr('sum(rate(archive_bins_total{result="failed"}[5m]))', 'ok')).toEqual([]);
    expect(checkExpr('histogram_quantile(0.9, rate(archive_bin_duration_seconds_bucket[5m]))', 'ok')).toEqual([]);
    expect(checkExpr('rate(archive_bins_failed_total[5m])', 'x')).toEqual(['x: archive_bins_failed_total is not a decided metric']);
    expect(checkExpr('archive_bins_total_bucket', 'x')).toEqual(['x: archive_bins_total_bucket is not a decided metric']);
    expect(checkExpr('archive_queue_jobs{queue="pack",status="waiting"}', 'x')).toEqual(['x: archive_queue_jobs has no label status']);
    expect(checkExpr('archive_queue_jobs{state="queued"}', 'x')).toEqual(['x: no queue state queued']);
    expect(checkExpr('vector(1)', 'x')).toEqual(['x: uses no metric']);
    expect(checkExpr('sum by (route) (rate(archive_bins_total[5m]))', 'x')).toEqual(['x: grouped by route, which no metric used has']);
  });
});

describe('deploy/monitoring/alerts.yaml', () => {
  const rules = (yaml.load(read('deploy/monitoring/alerts.yaml')) as { groups: { name: string; rules: any[] }[] }).groups.flatMap((g) => g.rules);

  it('alerts on a growing queue, failing bins, failing webhooks and no packer alive', () => {
    expect(rules.map((r) => r.alert)).toEqual(['ArchiveQueueGrowing', 'ArchiveBinsFailing', 'ArchiveWebhookDeliveriesFailing', 'ArchiveNoPackerAlive']);
    for (const rule of rules) {
      expect(rule).toEqual({
        alert: expect.any(String),
        expr: expect.any(String),
        for: expect.stringMatching(/^\d+m$/),
        labels: { severity: expect.stringMatching(/^(warning|critical)$/) },
        annotations: expect.objectContaining({ summary: expect.any(String) }),
      });
    }
  });

  it('use only decided metrics and labels', () => {
    expect(rules.flatMap((r) => checkExpr(r.expr, r.alert))).toEqual([]);
  });

  it('"no packer alive" uses the component label that the scrape job sets from the pod label', () => {
    const scrape = yaml.load(read('deploy/monitoring/prometheus-scrape.yaml')) as { scrape_configs: { relabel_configs: any[] }[] };
    const relabels = scrape.scrape_configs[0]!.relabel_configs;
    expect(relabels).toContainEqual({ source_labels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'], target_label: 'component' });
    expect(rules.find((r) => r.alert === 'ArchiveNoPackerAlive').expr).toContain('up{component="packer"}');
  });
});

describe('deploy/monitoring/grafana-dashboard.json', () => {
  const dashboard = JSON.parse(read('deploy/monitoring/grafana-dashboard.json'));
  const panels = dashboard.panels.filter((p: any) => p.type !== 'row');

  it('is a dashboard whose panels query Prometheus and do not overlap', () => {
    expect(dashboard).toMatchObject({ uid: 'archive-packager', title: expect.any(String), schemaVersion: expect.any(Number) });
    expect(new Set(dashboard.panels.map((p: any) => p.id)).size).toBe(dashboard.panels.length);
    const cells = new Set<string>();
    for (const p of dashboard.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x + w).toBeLessThanOrEqual(24);
      for (let i = x; i < x + w; i++) for (let j = y; j < y + h; j++) {
        expect(cells.has(`${i},${j}`) ? `${p.title} overlaps at ${i},${j}` : '').toBe('');
        cells.add(`${i},${j}`);
      }
    }
    for (const p of panels) expect(p.targets.length).toBeGreaterThan(0);
  });

  it('use only decided metrics and labels, and show every archive_* metric somewhere', () => {
    const exprs = panels.flatMap((p: any) => p.targets.map((t: any) => ({ expr: t.expr as string, where: p.title as string })));
    expect(exprs.flatMap(({ expr, where }: { expr: string; where: string }) => checkExpr(expr, where))).toEqual([]);
    const shown = new Set(exprs.flatMap(({ expr }: { expr: string }) => selectors(expr).map((s) => metricOf(s.name))));
    expect(Object.keys(DECIDED_METRICS).filter((m) => m.startsWith('archive_') && !shown.has(m))).toEqual([]);
  });
});

describe('k8s/packer.yaml KEDA trigger', () => {
  it('uses only decided metrics and labels', () => {
    const scaler = (yaml.loadAll(read('k8s/packer.yaml')) as any[]).find((d) => d.kind === 'ScaledObject');
    expect(scaler.spec.triggers.flatMap((t: any) => checkExpr(t.metadata.query, 'ScaledObject'))).toEqual([]);
  });
});
