/** Builds SDK v2 clients for the server tests, pinned to one protocol era. */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

export type Era = 'legacy' | 'modern';

export interface ClientEvents {
  tools: number;
  prompts: number;
  resources: number;
}

/** A connected client plus counters of the list_changed notifications it received. */
export async function connectHttpClient(
  url: string,
  era: Era,
): Promise<{
  client: Client;
  transport: StreamableHTTPClientTransport;
  events: ClientEvents;
}> {
  const events: ClientEvents = { tools: 0, prompts: 0, resources: 0 };
  const onChanged = (kind: keyof ClientEvents) => () => {
    events[kind]++;
  };
  const client = new Client(
    { name: 'moonhub-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
      listChanged: {
        tools: { onChanged: onChanged('tools'), autoRefresh: false, debounceMs: 0 },
        prompts: { onChanged: onChanged('prompts'), autoRefresh: false, debounceMs: 0 },
        resources: { onChanged: onChanged('resources'), autoRefresh: false, debounceMs: 0 },
      },
    },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport, events };
}

export async function waitFor(
  cond: () => boolean,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
