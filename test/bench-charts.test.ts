import { describe, expect, it } from '@jest/globals';
import { lineChart, niceTicks } from '../bench/lib/svg';

describe('the benches\' SVG charts', () => {
  it('pick round ticks that cover every value', () => {
    expect(niceTicks(0, 29)).toEqual([0, 10, 20, 30]);
    expect(niceTicks(0, 200)).toEqual([0, 50, 100, 150, 200]);
    expect(niceTicks(0, 0.9)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('draw every series inside the plot, with its name in the legend', () => {
    const svg = lineChart({ title: 'T <1>', xLabel: 'x', yLabel: 'y', xLog: true, series: [{ name: 'a', points: [[1, 5], [8, 29]] }, { name: 'b & c', dashed: true, points: [[1, 20], [8, 20]] }] });
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg).toContain('T &lt;1&gt;');
    expect(svg).toContain('b &amp; c');
    const ys = [...svg.matchAll(/<circle cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(ys).toHaveLength(4);
    for (const y of ys) expect(y).toBeGreaterThanOrEqual(36);
    expect(svg.match(/stroke-dasharray/g)).toHaveLength(2);
  });
});
