import { describe, expect, it } from '@jest/globals';
import { entriesMatch, jobsEnded, processesHealthy, storeMatches, usageMatches, webhooksMatch } from './invariants';

describe('the soak invariants', () => {
  it('jobs end: every job completed or failed with worded errors; healthy inputs completed', () => {
    const ok = { id: 'a', label: 'stored', status: 'completed', errors: [], healthy: true };
    expect(jobsEnded([ok, { id: 'b', label: 'faulty', status: 'failed', errors: ['origin too slow'], healthy: false }]).ok).toBe(true);
    expect(jobsEnded([{ ...ok, status: 'processing' }]).detail).toContain('still processing');
    expect(jobsEnded([{ ...ok, id: 'b', status: 'failed', errors: [], healthy: false }]).detail).toContain('without a reason');
    expect(jobsEnded([{ ...ok, status: 'failed', errors: ['ECONNRESET'], healthy: false }]).ok).toBe(false);
    expect(jobsEnded([{ ...ok, status: 'failed', errors: ['connection refused by the origin'] }]).detail).toContain('healthy inputs failed');
    expect(jobsEnded([{ ...ok, status: null }]).ok).toBe(true); // deleted before it ended
  });

  it('archives: name for name and byte for byte, missing names only when reported', () => {
    const allowed = new Map([
      ['a.bin', new Set(['1'])],
      ['c.bin', new Set(['3', '4'])],
    ]);
    expect(entriesMatch(allowed, [{ name: 'a.bin', sha256: '1' }, { name: 'c.bin', sha256: '4' }, { name: 'dir/', sha256: '' }], new Set())).toEqual([]);
    expect(entriesMatch(allowed, [{ name: 'a.bin', sha256: '1' }], new Set(['c.bin']))).toEqual([]);
    expect(entriesMatch(allowed, [{ name: 'a.bin', sha256: '2' }], new Set(['c.bin']))).toEqual(['entry a.bin: bytes differ from the origin\'s']);
    expect(entriesMatch(allowed, [{ name: 'a.bin', sha256: '1' }], new Set())).toEqual(['entry c.bin missing and not reported']);
    expect(entriesMatch(allowed, [{ name: 'a.bin', sha256: '1' }, { name: 'a.bin', sha256: '1' }, { name: 'x', sha256: '1' }], new Set(['c.bin']))).toHaveLength(2);
  });

  it('store: objects only of live jobs, none missing, no upload left open but those kept for a retry', () => {
    const base = { objects: ['k1', 'k2'], liveKeys: new Set(['k1', 'k2']), sweepable: new Set<string>(), openUploads: ['u1'], resumableUploads: new Set(['u1']) };
    expect(storeMatches(base).ok).toBe(true);
    expect(storeMatches({ ...base, objects: ['k1', 'k2', 'k3'] }).detail).toContain('object k3 of no live job');
    expect(storeMatches({ ...base, objects: ['k1', 'k2', 'k3'], sweepable: new Set(['k3']) }).ok).toBe(true);
    expect(storeMatches({ ...base, objects: ['k1'] }).detail).toContain('live ZIP k2 missing');
    expect(storeMatches({ ...base, openUploads: ['u1', 'u2'] }).detail).toContain('u2 left open');
  });

  it('usage: stream bytes within one download of the bytes received; stored GB-days equal the sum', () => {
    const u = { user: 'u', reportedStreamBytes: 1000, receivedStreamBytes: 1100, killedInFlightBytes: 0, unreceivedBytes: 0, oneDownload: 100, reportedGbDays: 0.5, expectedGbDays: 0.5 };
    expect(usageMatches([u]).ok).toBe(true);
    expect(usageMatches([{ ...u, receivedStreamBytes: 1101 }]).ok).toBe(false);
    expect(usageMatches([{ ...u, receivedStreamBytes: 1300, killedInFlightBytes: 200 }]).ok).toBe(true);
    expect(usageMatches([{ ...u, reportedStreamBytes: 1201 }]).ok).toBe(false);
    expect(usageMatches([{ ...u, reportedStreamBytes: 1250, unreceivedBytes: 50 }]).ok).toBe(true);
    expect(usageMatches([{ ...u, reportedGbDays: 0.6 }]).detail).toContain('stored_gb_days');
  });

  it('webhooks: every end and whole download at least once, signed, to its own user only', () => {
    const expect_ = { owner: new Map([['j1', 'u1'], ['j2', 'u2']]), ends: new Map([['j1', 'job.completed'], ['j2', 'job.failed']]), downloads: new Set(['z1']) };
    const events = [
      { user: 'u1', event: 'job.completed', jobId: 'j1', signatureValid: true },
      { user: 'u1', event: 'job.completed', jobId: 'j1', signatureValid: true },
      { user: 'u2', event: 'job.failed', jobId: 'j2', signatureValid: true },
      { user: 'u1', event: 'download.completed', jobId: 'j1', zipId: 'z1', complete: true, signatureValid: true },
    ];
    expect(webhooksMatch(events, expect_).ok).toBe(true);
    expect(webhooksMatch(events.slice(1), expect_).ok).toBe(true);
    expect(webhooksMatch(events.slice(2), expect_).detail).toContain('no job.completed for job j1');
    expect(webhooksMatch(events.slice(0, 3), expect_).detail).toContain('no download.completed for z1');
    expect(webhooksMatch([...events, { user: 'u1', event: 'job.failed', jobId: 'j2', signatureValid: true }], expect_).detail).toContain("u2's job j2 delivered to u1");
    expect(webhooksMatch([{ ...events[0]!, signatureValid: false }, ...events.slice(1)], expect_).detail).toContain('signature invalid');
  });

  it('processes: no crash, no unhandled rejection, RSS within budget', () => {
    const p = { name: 'packer-1', crashes: 0, unhandled: 0, rssMB: 150, budgetMB: 200 };
    expect(processesHealthy([p]).ok).toBe(true);
    expect(processesHealthy([{ ...p, crashes: 1 }]).ok).toBe(false);
    expect(processesHealthy([{ ...p, unhandled: 2 }]).ok).toBe(false);
    expect(processesHealthy([{ ...p, rssMB: 201 }]).detail).toContain('over its 200 MB');
  });
});
