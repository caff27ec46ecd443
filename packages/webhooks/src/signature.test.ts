import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { newWebhookSecret, parseSignatureHeader, signatureHeader, verifySignature } from './signature';

const body = '{"delivery_id":"d","event":"job.completed"}';
const t = 1_800_000_000;
const at = new Date(t * 1000);

describe('webhook signatures', () => {
  it('secrets are whsec_ + 32 random bytes, never the same twice', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newWebhookSecret()).not.toBe(a);
  });

  it('v1 is the hex HMAC-SHA256 of "<t>.<raw body>" with the secret', () => {
    const header = signatureHeader(['whsec_one'], t, body);
    const expected = createHmac('sha256', 'whsec_one').update(`${t}.${body}`).digest('hex');
    expect(header).toBe(`t=${t},v1=${expected}`);
    expect(verifySignature(header, 'whsec_one', body, { now: at })).toBe(true);
    expect(verifySignature(header, 'whsec_two', body, { now: at })).toBe(false);
    expect(verifySignature(header, 'whsec_one', body.replace('job', 'jab'), { now: at })).toBe(false);
  });

  it('during a rotation both secrets verify, the new one first', () => {
    const header = signatureHeader(['whsec_new', 'whsec_old'], t, body);
    const parsed = parseSignatureHeader(header)!;
    expect(parsed.signatures).toHaveLength(2);
    expect(parsed.signatures[0]).toBe(createHmac('sha256', 'whsec_new').update(`${t}.${body}`).digest('hex'));
    expect(verifySignature(header, 'whsec_new', body, { now: at })).toBe(true);
    expect(verifySignature(header, 'whsec_old', body, { now: at })).toBe(true);
  });

  it('a timestamp outside the tolerance fails (replays), as do malformed headers', () => {
    const header = signatureHeader(['s'], t, body);
    expect(verifySignature(header, 's', body, { now: new Date((t + 301) * 1000) })).toBe(false);
    expect(verifySignature(header, 's', body, { now: new Date((t + 299) * 1000) })).toBe(true);
    for (const bad of ['', 't=1', 'v1=abc', `t=x,v1=${'a'.repeat(64)}`, 'garbage']) expect(verifySignature(bad, 's', body, { now: at })).toBe(false);
  });
});
