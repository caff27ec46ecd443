import { describe, expect, it } from '@jest/globals';
import { formatZodError } from './schemas';
import { listDeliveriesQuerySchema, webhookCreateSchema } from './webhooks';

const problem = (input: unknown) => {
  const r = webhookCreateSchema.safeParse(input);
  return r.success ? null : formatZodError(r.error);
};

describe('POST /webhooks body', () => {
  it('defaults events to job.completed and job.failed, and description to none', () => {
    expect(webhookCreateSchema.parse({ url: 'https://hooks.example.com/a' })).toEqual({ url: 'https://hooks.example.com/a', events: ['job.completed', 'job.failed'] });
    expect(webhookCreateSchema.parse({ url: 'https://h.example/a', events: ['download.completed'], description: null })).toEqual({ url: 'https://h.example/a', events: ['download.completed'], description: null });
  });

  it('names each problem', () => {
    expect(problem({})).toBe('url: is required');
    expect(problem({ url: 'ftp://x.example/' })).toBe('url: must be an https URL');
    expect(problem({ url: ' https://x.example/' })).toBe('url: must be an https URL');
    expect(problem({ url: `https://x.example/${'a'.repeat(2048)}` })).toBe('url: must be at most 2048 characters');
    expect(problem({ url: 'https://u:p@x.example/' })).toMatch(/^url: must not contain credentials/);
    expect(problem({ url: 'https://x.example/', events: [] })).toBe('events: must name at least one event');
    expect(problem({ url: 'https://x.example/', events: ['job.done'] })).toBe('events[0]: must be one of "job.completed", "job.failed", "download.completed"');
    expect(problem({ url: 'https://x.example/', events: ['job.failed', 'job.failed'] })).toBe('events: must not name an event twice');
    expect(problem({ url: 'https://x.example/', description: 'd'.repeat(256) })).toBe('description: must be at most 255 characters (got 256)');
    expect(problem({ url: 'https://x.example/', secret: 'whsec_mine' })).toBe('unknown field "secret"');
    expect(problem([])).toBe('the request body must be a JSON object');
  });
});

describe('GET /webhooks/:id/deliveries query', () => {
  it('takes the job list limit and cursor rules, nothing else', () => {
    expect(listDeliveriesQuerySchema.parse({})).toEqual({ limit: 20 });
    expect(listDeliveriesQuerySchema.parse({ limit: '5', cursor: 'abc' })).toEqual({ limit: 5, cursor: 'abc' });
    expect(listDeliveriesQuerySchema.safeParse({ limit: '101' }).success).toBe(false);
    expect(listDeliveriesQuerySchema.safeParse({ status: 'failed' }).success).toBe(false);
  });
});
