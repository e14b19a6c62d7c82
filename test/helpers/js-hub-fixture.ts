/**
 * A hub in a child process for the server tests: a Registry with a few JS tools, prompts and
 * resources (fixed and templated), served over HTTP (prints `URL <url>` on stdout) or stdio.
 * Usage: node js-hub-fixture.js http|stdio [pageSize]
 */
import { Registry } from '../../src/registry/registry.js';
import { serveStdio, startHttpServer } from '../../src/server/index.js';

const mode = process.argv[2] ?? 'http';
const pageSize = Number(process.argv[3] ?? 5);
const registry = new Registry({ hubId: 'fixture-hub' });
let added = 0;

registry.addTool('fixture', {
  name: 'echo',
  description: 'Echoes its text',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  handler: async (args) => ({ content: [{ type: 'text', text: String(args.text) }] }),
});
registry.addTool('fixture', {
  name: 'add',
  description: 'Adds two numbers',
  inputSchema: {
    type: 'object',
    properties: { a: { type: 'number' }, b: { type: 'number' } },
    required: ['a', 'b'],
  },
  handler: async (args) => {
    const sum = Number(args.a) + Number(args.b);
    return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
  },
});
registry.addTool('fixture', {
  name: 'whoami',
  description: 'Reports the call context',
  inputSchema: { type: 'object' },
  handler: async (_args, ctx) => ({
    content: [
      {
        type: 'text',
        text: JSON.stringify({
          hub_id: ctx.hub_id,
          session_uuid: ctx.session_uuid ?? null,
          request_id: ctx.request_id,
        }),
      },
    ],
  }),
});
registry.addTool('fixture', {
  name: 'slow',
  description: 'Waits until cancelled or ms elapse; says which',
  inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
  handler: (args, ctx) =>
    new Promise((resolve) => {
      const timer = setTimeout(
        () => resolve({ content: [{ type: 'text', text: 'done' }] }),
        Number(args.ms ?? 10_000),
      );
      ctx.signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        process.stderr.write('slow: aborted\n');
        resolve({ content: [{ type: 'text', text: 'aborted' }] });
      });
    }),
});
registry.addTool('fixture', {
  name: 'progress',
  description: 'Reports progress twice, then answers',
  inputSchema: { type: 'object' },
  handler: async (_args, ctx) => {
    ctx.peer?.progress(1, 2, 'half');
    await new Promise((r) => setTimeout(r, 5));
    ctx.peer?.progress(2, 2, 'done');
    return { content: [{ type: 'text', text: 'progressed' }] };
  },
});
registry.addTool('fixture', {
  name: 'add_tool',
  description: 'Registers another tool, prompt and resource (changes every list)',
  inputSchema: { type: 'object' },
  handler: async () => {
    added++;
    const n = added;
    await registry.batch(() => {
      registry.addTool('dynamic', {
        name: `dynamic_${n}`,
        description: `Added at runtime (#${n})`,
        inputSchema: { type: 'object' },
        handler: async () => ({ content: [{ type: 'text', text: `dynamic ${n}` }] }),
      });
      registry.addPrompt('dynamic', {
        name: `dynamic_prompt_${n}`,
        description: 'Added at runtime',
        arguments: [],
        handler: async () => ({
          messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }],
        }),
      });
      registry.addResource('dynamic', {
        uriTemplate: `mem://dynamic/${n}`,
        name: `dynamic_${n}`,
        handler: async (uri) => ({ contents: [{ uri, text: 'dynamic' }] }),
      });
    });
    return { content: [{ type: 'text', text: `added dynamic_${n}` }] };
  },
});
for (let i = 0; i < 7; i++) {
  const name = `bulk_${String(i).padStart(2, '0')}`;
  registry.addTool('bulk', {
    name,
    description: 'Filler for pagination',
    inputSchema: { type: 'object' },
    handler: async () => ({ content: [{ type: 'text', text: name }] }),
  });
}

registry.addPrompt('fixture', {
  name: 'greet',
  description: 'Greets someone',
  arguments: [{ name: 'name', required: true }],
  handler: async (args) => ({
    description: 'A greeting',
    messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${args.name}!` } }],
  }),
});

registry.addResource('fixture', {
  uriTemplate: 'mem://readme',
  name: 'readme',
  mimeType: 'text/plain',
  handler: async (uri) => ({ contents: [{ uri, mimeType: 'text/plain', text: 'read me' }] }),
});
registry.addResource('fixture', {
  uriTemplate: 'note://{id}',
  name: 'note',
  mimeType: 'text/plain',
  handler: async (uri, params) => ({
    contents: [{ uri, mimeType: 'text/plain', text: `note ${params.id}` }],
  }),
});

if (mode === 'stdio') {
  const server = serveStdio(registry, { input: process.stdin, output: process.stdout, pageSize });
  void server.closed.then(() => process.exit(0));
} else {
  const handle = await startHttpServer(registry, {
    port: 0,
    pageSize,
    idleTimeoutMs: Number(process.env.IDLE_TIMEOUT_MS ?? 30 * 60_000),
  });
  process.stdout.write(`URL ${handle.url}\n`);
  const stop = (): void => {
    void handle.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
