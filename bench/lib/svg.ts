// A small SVG line chart for the benches' figures: numbers in, one self-contained file out
// (no script, no external font), so bench/README.md can show it and git can diff it.

export interface Series {
  name: string;
  points: Array<[number, number]>;
  /** Drawn dashed: a baseline or a target rather than a measurement. */
  dashed?: boolean;
}

export interface Chart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** A logarithmic x axis (file counts, concurrencies). */
  xLog?: boolean;
  /** Start the y axis at zero (default true). */
  yFromZero?: boolean;
}

const W = 640;
const H = 360;
const M = { left: 64, right: 16, top: 36, bottom: 84 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#7f7f7f'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const num = (v: number) => (Math.abs(v) >= 100 || Number.isInteger(v) ? v.toFixed(0) : v.toPrecision(2));

/** 4-6 round tick values covering [lo, hi]. */
export function niceTicks(lo: number, hi: number): number[] {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw)!;
  const ticks: number[] = [];
  const last = Math.ceil(hi / step - 1e-9) * step;
  for (let v = Math.floor(lo / step) * step; v <= last + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

export function lineChart(chart: Chart): string {
  const all = chart.series.flatMap((s) => s.points);
  if (all.length === 0) throw new Error(`chart "${chart.title}" has no points`);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const fx = chart.xLog ? Math.log10 : (v: number) => v;
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const yTicks = niceTicks(chart.yFromZero === false ? Math.min(...ys) : 0, Math.max(...ys));
  const [y0, y1] = [yTicks[0]!, yTicks.at(-1)!];
  const xTicks = chart.xLog ? [...new Set(xs)].sort((a, b) => a - b) : niceTicks(x0, x1);
  const [lx0, lx1] = chart.xLog ? [fx(x0), fx(x1)] : [xTicks[0]!, xTicks.at(-1)!];
  const px = (v: number) => M.left + ((fx(v) - lx0) / (lx1 - lx0 || 1)) * (W - M.left - M.right);
  const py = (v: number) => H - M.bottom - ((v - y0) / (y1 - y0 || 1)) * (H - M.top - M.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(chart.title)}</text>`,
  ];
  for (const t of yTicks) {
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${py(t).toFixed(1)}" y2="${py(t).toFixed(1)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${M.left - 6}" y="${(py(t) + 4).toFixed(1)}" text-anchor="end">${num(t)}</text>`);
  }
  for (const t of xTicks) out.push(`<text x="${px(t).toFixed(1)}" y="${H - M.bottom + 16}" text-anchor="middle">${num(t)}</text>`);
  out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#333"/>`);
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#333"/>`);
  out.push(`<text x="${(M.left + W - M.right) / 2}" y="${H - M.bottom + 34}" text-anchor="middle">${esc(chart.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)}</text>`);
  chart.series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const pts = [...s.points].sort((a, b) => a[0] - b[0]).map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${pts.join(' ')}"/>`);
    if (s.points.length <= 40) for (const p of pts) out.push(`<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="3" fill="${colour}"/>`);
    // The legend, in rows of three below the axis label.
    const lx = M.left + (i % 3) * 190;
    const ly = H - 24 + Math.floor(i / 3) * 16 - (chart.series.length > 3 ? 8 : 0);
    out.push(`<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${lx + 24}" y="${ly}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
