// `keys list|create|revoke` and `webhooks list|create|delete`: the account's API keys and webhooks.
import type { Command } from 'commander';
import type { WebhookEvent } from '@ap/sdk';
import { UsageError, type CommandContext } from './context';

const WEBHOOK_EVENTS: readonly WebhookEvent[] = ['job.completed', 'job.failed', 'download.completed'];

export function registerAccountCommands(program: Command, ctx: CommandContext): void {
  const keys = program.command('keys').description('API keys');
  keys.command('list').description('list API keys').action(async (_opts: unknown, cmd: Command) => {
    const client = ctx.clientOf(cmd);
    const { api_keys } = await client.listApiKeys();
    for (const k of api_keys) ctx.out().line(`${k.id}  ${k.name || '(no name)'}  created ${k.created_at}  expires ${k.expires_at ?? 'never'}  last used ${k.last_used_at ?? 'never'}`);
    ctx.out().result({ success: true, api_keys });
  });
  keys
    .command('create')
    .description('create an API key (its value is shown once)')
    .option('--name <name>', 'label')
    .option('--expires-at <datetime>', 'ISO 8601 date and time, e.g. 2030-01-31T12:00:00Z')
    .action(async (opts: { name?: string; expiresAt?: string }, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      const { api_key } = await client.createApiKey({ name: opts.name, expires_at: opts.expiresAt });
      ctx.out().line(`created key ${api_key.id}${api_key.name ? ` (${api_key.name})` : ''}; its value, shown only now:`);
      ctx.out().line(api_key.key);
      ctx.out().result({ success: true, api_key });
    });
  keys.command('revoke').description('revoke an API key').argument('<id>', 'key id').action(async (id: string, _opts: unknown, cmd: Command) => {
    const client = ctx.clientOf(cmd);
    const res = await client.revokeApiKey(id);
    ctx.out().line(res.message);
    ctx.out().result({ success: true, id, message: res.message });
  });

  // Webhook routes (docs/webhooks.md#webhooks).
  const hooks = program.command('webhooks').description('webhooks');
  hooks.command('list').description('list webhooks').action(async (_opts: unknown, cmd: Command) => {
    const client = ctx.clientOf(cmd);
    const { webhooks } = await client.listWebhooks();
    for (const w of webhooks) ctx.out().line(`${w.id}  ${w.url}  ${w.events.join(',')}${w.description ? `  ${w.description}` : ''}`);
    ctx.out().result({ success: true, webhooks });
  });
  hooks
    .command('create')
    .description('create a webhook (its signing secret is shown once)')
    .argument('<url>', 'https URL that receives the events')
    .option('--events <list>', `comma-separated: ${WEBHOOK_EVENTS.join(', ')}`)
    .option('--description <text>', 'description')
    .action(async (url: string, opts: { events?: string; description?: string }, cmd: Command) => {
      const client = ctx.clientOf(cmd);
      const names = opts.events?.split(',').map((e) => e.trim()).filter(Boolean);
      const isEvent = (e: string): e is WebhookEvent => (WEBHOOK_EVENTS as readonly string[]).includes(e);
      for (const e of names ?? []) if (!isEvent(e)) throw new UsageError(`unknown event ${JSON.stringify(e)} (allowed: ${WEBHOOK_EVENTS.join(', ')})`);
      const events = names?.filter(isEvent);
      const { webhook } = await client.createWebhook({ url, ...(events ? { events } : {}), ...(opts.description ? { description: opts.description } : {}) });
      ctx.out().line(`created webhook ${webhook.id}; its signing secret, shown only now:`);
      ctx.out().line(webhook.secret);
      ctx.out().result({ success: true, webhook });
    });
  hooks.command('delete').description('delete a webhook').argument('<id>', 'webhook id').action(async (id: string, _opts: unknown, cmd: Command) => {
    const client = ctx.clientOf(cmd);
    const res = await client.deleteWebhook(id);
    ctx.out().line(res.message);
    ctx.out().result({ success: true, id, message: res.message });
  });
}
