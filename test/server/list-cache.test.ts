/**
 * The cached list pages (src/server/list-cache.ts) through a real hub in token mode, with
 * sessions made by the real CLI and SDK clients of both eras: each caller sees its own view's
 * pages (never another view's cached page), every answer carries its own request id, a hot
 * reload shows at once (no stale page), a bad cursor is refused every time while the hub goes
 * on serving, and the cache's bound is a config key the schema checks.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { WIRE_ERRORS } from '../../src/errors.js';
import type { Era } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  rawPost,
  type HubDir,
  type Issued,
} from '../helpers/auth-hub.js';

const CONFIG = `
hub_id: listed
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [alpha], builtins: [] }
  B: { plugins: [beta], builtins: [] }
`;

/** A plugin with `n` tools `<plugin>.<stem>NNN` (more than one page of 100). */
function manyTools(plugin: string, stem: string, n: number): string {
  return `
for i = 1, ${n} do
  mcp.tool(string.format("${plugin}.${stem}%03d", i), { description = "tool " .. i }, function()
    return "ok"
  end)
end
`;
}

async function allNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const r = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
    if (cursor === undefined) return names;
  }
  throw new Error('more than 20 pages');
}

const expected = (plugin: string, stem: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${plugin}.${stem}${String(i + 1).padStart(3, '0')}`);

describe('cached list pages', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  const sessions: Record<'A' | 'B', Issued> = {} as never;

  before(async () => {
    dir = makeHubDir({ alpha: manyTools('alpha', 't', 150), beta: manyTools('beta', 'u', 120) });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    sessions.A = createSession([...common, '--agent', 'A']);
    sessions.B = createSession([...common, '--agent', 'B']);
  });
  after(async () => hub.stop());

  for (const era of ['modern', 'legacy'] as Era[]) {
    it(`each view gets its own pages, asked in turns (${era})`, async () => {
      const a = await connectWithToken(hub.url, era, sessions.A.token);
      const b = await connectWithToken(hub.url, era, sessions.B.token);
      try {
        for (let round = 0; round < 3; round++) {
          assert.deepEqual(await allNames(a.client), expected('alpha', 't', 150));
          assert.deepEqual(await allNames(b.client), expected('beta', 'u', 120));
        }
      } finally {
        await Promise.allSettled([a.client.close(), b.client.close()]);
      }
    });
  }

  it('a cached page answers with the id of each request', async () => {
    const auth = { Authorization: `Bearer ${sessions.A.token}` };
    const ids: (string | number)[] = [7, 'req-x', 0, 12345678901, 'é"\\'];
    const bodies: Record<string, unknown>[] = [];
    for (const id of ids) {
      const r = await rawPost(hub.url, { id, method: 'tools/list', params: {} }, auth);
      assert.equal(r.status, 200);
      const body = JSON.parse(r.text) as Record<string, unknown>;
      assert.equal(body.id, id);
      bodies.push(body.result as Record<string, unknown>);
    }
    for (const b of bodies) assert.deepEqual(b, bodies[0]);
    const first = bodies[0]!;
    assert.equal(first.resultType, 'complete');
    assert.equal((first.tools as unknown[]).length, 100);
    assert.equal(typeof first.nextCursor, 'string');
  });

  it('a bad cursor is refused every time, and the hub goes on serving', async () => {
    const auth = { Authorization: `Bearer ${sessions.B.token}` };
    const bad = ['nonsense', Buffer.from('k1:zzz').toString('base64') + '=', 42];
    for (let i = 0; i < 2; i++) {
      for (const cursor of bad) {
        const r = await rawPost(hub.url, { method: 'tools/list', params: { cursor } }, auth);
        const body = JSON.parse(r.text) as { error?: { code: number; message: string } };
        assert.equal(body.error?.code, WIRE_ERRORS.invalid_cursor.code, r.text);
      }
    }
    const { client } = await connectWithToken(hub.url, 'modern', sessions.B.token);
    try {
      assert.deepEqual(await allNames(client), expected('beta', 'u', 120));
    } finally {
      await client.close();
    }
  });

  it('a reload shows at once: no page of the old catalogue is served', async () => {
    const { client } = await connectWithToken(hub.url, 'modern', sessions.A.token);
    try {
      assert.deepEqual(await allNames(client), expected('alpha', 't', 150));
      writeFileSync(join(dir.plugins, 'alpha.lua'), manyTools('alpha', 'n', 130));
      const deadline = Date.now() + 30_000;
      let names = await allNames(client);
      while (names[0] !== 'alpha.n001' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        names = await allNames(client);
      }
      // Every page at once: a stale second page would mix the old names in.
      assert.deepEqual(names, expected('alpha', 'n', 130));
      assert.deepEqual(await allNames(client), expected('alpha', 'n', 130));
    } finally {
      await client.close();
    }
  });
});

describe('performance.list_cache_bytes', () => {
  it('0 turns the cache off and the lists stay right; a negative bound is refused', async () => {
    const dir = makeHubDir({ alpha: manyTools('alpha', 't', 150) });
    const off = dir.write(
      'off.yaml',
      'plugins: { dirs: [plugins] }\nperformance: { list_cache_bytes: 0 }\n',
    );
    const hub = await startMoonhub(['--config', off, '--data', dir.data]);
    try {
      const { client } = await connectWithToken(hub.url, 'modern', undefined);
      try {
        const names = await allNames(client);
        assert.deepEqual(
          names.filter((n) => n.startsWith('alpha.')),
          expected('alpha', 't', 150),
        );
      } finally {
        await client.close();
      }
    } finally {
      await hub.stop();
    }
    const bad = dir.write('bad.yaml', 'performance: { list_cache_bytes: -1 }\n');
    await assert.rejects(startMoonhub(['--config', bad, '--data', dir.data]), /list_cache_bytes/);
  });
});
