import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { bodySha256, bodySlice, faultSchedule, isWorded, jobSpec, JOB_WEIGHTS, pick, rng } from './plan';

describe('the soak plan', () => {
  it('replays the same fault schedule from the same seed, another from another', () => {
    const instances = ['api-1', 'api-2', 'packer-1'];
    const a = faultSchedule(7, 20 * 60_000, instances);
    expect(faultSchedule(7, 20 * 60_000, instances)).toEqual(a);
    expect(faultSchedule(8, 20 * 60_000, instances)).not.toEqual(a);
  });

  it('schedules at least one fault a minute, each signal aimed at an instance', () => {
    for (const seed of [1, 2, 3, 99]) {
      const faults = faultSchedule(seed, 20 * 60_000, ['api-1', 'packer-1']);
      expect(faults.length).toBeGreaterThanOrEqual(20);
      let previous = 0;
      for (const f of faults) {
        expect(f.atMs - previous).toBeLessThanOrEqual(60_000);
        expect(f.atMs).toBeLessThanOrEqual(20 * 60_000);
        previous = f.atMs;
        if (f.kind === 'kill9' || f.kind === 'sigterm') expect(['api-1', 'packer-1']).toContain(f.target);
      }
    }
  });

  it('picks every job kind over a run, in proportion to its weight', () => {
    const r = rng(3);
    const counts = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      const k = pick(r, JOB_WEIGHTS);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    for (const k of Object.keys(JOB_WEIGHTS)) expect(counts.get(k)).toBeGreaterThan(0);
    expect(counts.get('stored')!).toBeGreaterThan(counts.get('destination')!);
  });

  it('names in a job spec the files whose bytes the origin serves', () => {
    const spec = jobSpec(rng(5), 'aes-stream', 'http://o', 1, null, null);
    expect(spec.body).toMatchObject({ mode: 'stream', encryption: { method: 'aes-256', password: spec.password } });
    expect((spec.body.files as Array<{ url: string }>).map((f) => f.url)).toEqual(spec.files.map((f) => f.url));
    for (const f of spec.files) expect(f.url).toBe(`http://o/${f.body}/${f.size}/${f.seed}/${f.filename}`);
  });

  it('serves any range of a body as a slice of the whole, and hashes the whole', () => {
    const whole = bodySlice('n', 42, 0, 5 * 1024 * 1024 + 3);
    expect(bodySlice('n', 42, 4_194_000, 4_194_500)).toEqual(whole.subarray(4_194_000, 4_194_500));
    expect(bodySlice('t', 42, 0, 100)).not.toEqual(whole.subarray(0, 100));
    expect(bodySha256('n', 42, whole.length)).toBe(createHash('sha256').update(whole).digest('hex'));
  });

  it('tells a worded error from a stack, a code or an object', () => {
    expect(isWorded('origin too slow')).toBe(true);
    expect(isWorded('archive exceeds the plan\'s per-archive limit')).toBe(true);
    expect(isWorded('ECONNRESET')).toBe(false);
    expect(isWorded('TypeError: x is not a function\n    at f (a.js:1:1)')).toBe(false);
    expect(isWorded('[object Object]')).toBe(false);
    expect(isWorded('cannot read undefined')).toBe(false);
    expect(isWorded(null)).toBe(false);
  });
});
