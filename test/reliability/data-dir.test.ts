/**
 * One data folder (issue 12, item 7): `data_dir` in the config, relative to the config file, is
 * used by `serve` and by every `moonhub session` command wherever it runs; a command that finds
 * no database says which path it looked at and creates nothing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rawPost } from '../helpers/auth-hub.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { scratch, type Scratch } from './helpers.js';

const CONFIG = `
hub_id: data-hub
auth: { mode: token }
data_dir: state
plugins: { dirs: [plugins] }
agents:
  bot: {}
`;

/** Runs the CLI in `cwd`. */
function cli(
  cwd: string,
  args: string[],
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('data_dir', () => {
  let dir: Scratch;
  let config: string;
  let elsewhere: string;
  let hub: MoonhubProcess;

  before(async () => {
    dir = scratch();
    dir.write('conf/plugins/ok.lua', 'mcp.tool("ok", {}, function() return "ok" end)\n');
    config = dir.write('conf/moonhub.yaml', CONFIG);
    elsewhere = join(dir.dir, 'elsewhere');
    mkdirSync(elsewhere);
    hub = await startMoonhub(['--config', config, '--no-watch']);
  });

  after(async () => {
    await hub.stop();
    dir.remove();
  });

  it('is where serve and every session command look, wherever they run', async () => {
    const created = cli(elsewhere, ['session', 'create', '--config', config, '--agent', 'bot']);
    assert.equal(created.status, 0, created.stderr);
    const s = JSON.parse(created.stdout) as { session_uuid: string; token: string };
    assert.ok(
      existsSync(join(dir.dir, 'conf/state')),
      'the database is in the config-relative folder',
    );
    assert.equal(
      existsSync(join(elsewhere, '.moonhub')),
      false,
      'nothing in the current directory',
    );

    const auth = { Authorization: `Bearer ${s.token}` };
    const served = await rawPost(hub.url, { method: 'tools/list', params: {} }, auth);
    assert.equal(served.status, 200, 'serve reads the same database');

    const listed = cli(dir.dir, ['session', 'list', '-c', config]);
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(s.session_uuid));

    const revoked = cli(elsewhere, ['session', 'revoke', s.session_uuid, '-c', config]);
    assert.equal(revoked.status, 0, revoked.stderr);
    const refused = await rawPost(hub.url, { method: 'tools/list', params: {} }, auth);
    assert.equal(refused.status, 403, 'the revoked token stops working at once');
  });

  it('a list or revoke that finds no database names the path and creates nothing', () => {
    const empty = join(dir.dir, 'empty');
    mkdirSync(empty);
    const r = cli(empty, ['session', 'revoke', '00000000-0000-0000-0000-000000000000']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`no sessions database at ${join(empty, '.moonhub')}`));
    assert.match(r.stderr, /the default \.\/\.moonhub of the current directory/);
    assert.equal(existsSync(join(empty, '.moonhub')), false, 'no empty database was created');
    const l = cli(empty, ['session', 'list', '--data', 'nowhere']);
    assert.notEqual(l.status, 0);
    assert.match(l.stderr, /no sessions database at .*nowhere.* \(the data folder from --data\)/);
    assert.equal(existsSync(join(empty, 'nowhere')), false);
  });
});
