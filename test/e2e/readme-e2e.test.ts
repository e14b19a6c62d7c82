/**
 * Issue 15, item 1: the README's first-hub commands, run in order in a scratch folder, as a new
 * user would, with `moonhub` on the PATH from the package as installed: `npm pack`, then a global
 * install into a temporary prefix. Then a real MCP client talks to the `moonhub dev` the block
 * ends with, and an example script runs from the installed package against a real server.
 *
 * Bounded: the install prefers npm's cache (`npm ci` filled it with every dependency's tarball)
 * and skips install scripts. It is not `--offline`: a global install resolves each dependency's
 * version range again, which needs the registry's metadata, and `npm ci` (lockfile only) never
 * caches that, so on a fresh machine an offline install fails. The registry is reachable wherever
 * `npm ci` just ran. The SQLite driver's native build, which its install script would make, is
 * taken from this checkout (same Node.js), so nothing is compiled.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { ROOT } from '../helpers/moonhub-process.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';

const MARKER = 'test/e2e/readme-e2e.test.ts runs this block';

/** The README's tested block: its command lines, comments removed. */
function readmeCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(MARKER);
  assert.ok(at > 0, `README.md has no block marked "${MARKER}"`);
  const block = /```sh\n([^]*?)```/.exec(readme.slice(at))![1]!;
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '');
}

describe("the README's commands on the installed package", () => {
  let scratch: string;
  let prefix: string;
  let env: NodeJS.ProcessEnv;
  let dev: ChildProcess | undefined;
  let devOut = '';
  let client: Client | undefined;
  let upstream: HttpUpstream | undefined;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'moonhub-readme-'));
    prefix = join(scratch, 'prefix');
    const pack = spawnSync('npm', ['pack', '--pack-destination', scratch, '--silent'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(pack.status, 0, `npm pack failed: ${pack.stderr}`);
    const tarball = join(
      scratch,
      readdirSync(scratch).find((f) => f.endsWith('.tgz'))!,
    );
    const install = spawnSync(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        tarball,
        '--prefer-offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
      ],
      { cwd: scratch, encoding: 'utf8', timeout: 180_000 },
    );
    assert.equal(
      install.status,
      0,
      `npm install -g of the packed tarball failed (is the npm registry reachable?)\n${install.stderr}`,
    );
    const driver = join(
      'node_modules',
      'better-sqlite3',
      'build',
      'Release',
      'better_sqlite3.node',
    );
    const installed = join(prefix, 'lib', 'node_modules', 'moonhub');
    mkdirSync(dirname(join(installed, driver)), { recursive: true });
    copyFileSync(join(ROOT, driver), join(installed, driver));
    env = {
      ...process.env,
      PATH: `${join(prefix, 'bin')}${delimiter}${process.env.PATH ?? ''}`,
      NPM_CONFIG_PREFIX: prefix,
    };
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    if (dev && dev.exitCode === null) {
      const exited = new Promise((r) => dev!.once('exit', r));
      dev.kill('SIGTERM');
      await exited;
    }
    await upstream?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('puts moonhub on the PATH, and npx finds it too', () => {
    const which = spawnSync('sh', ['-c', 'command -v moonhub && moonhub --version'], {
      env,
      encoding: 'utf8',
    });
    assert.equal(which.status, 0, which.stderr);
    assert.match(
      which.stdout,
      new RegExp(`^${join(prefix, 'bin', 'moonhub')}\n\\d+\\.\\d+\\.\\d+`),
    );
    const npx = spawnSync('npx', ['--offline', 'moonhub', '--version'], {
      cwd: scratch,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(npx.status, 0, npx.stderr);
    assert.match(npx.stdout, /^\d+\.\d+\.\d+/);
  });

  it('runs the first-hub block in order; the moonhub dev it ends with serves a client', async () => {
    const lines = readmeCommands();
    const last = lines.pop()!;
    assert.equal(last, 'moonhub dev', 'the block ends with moonhub dev');
    // Everything before it, as one shell session (the block's `cd` carries over), stopping at
    // the first failure and showing each command's output.
    const script = [
      'set -e',
      ...lines.map((l) => `echo "+ ${l.replace(/["$`\\]/g, '\\$&')}"; ${l}`),
      'pwd',
    ];
    const run = spawnSync('bash', ['-c', script.join('\n')], {
      cwd: scratch,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(run.status, 0, `a README command failed:\n${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /"greeting": "Hello, Ada!"/);
    assert.match(run.stdout, /weather_hello/);
    const hubDir = run.stdout.trim().split('\n').pop()!;
    assert.ok(existsSync(join(hubDir, 'plugins', 'weather.lua')));

    // The one change: port 0, since 8848 may be taken on a shared machine.
    dev = spawn('bash', ['-c', `exec ${last} --port 0`], {
      cwd: hubDir,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    dev.stderr!.on('data', (d: Buffer) => (devOut += d.toString()));
    const start = Date.now();
    while (!/serving MCP at (\S+)/.test(devOut)) {
      if (Date.now() - start > 30_000 || dev.exitCode !== null)
        throw new Error(`moonhub dev did not start:\n${devOut}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const url = /serving MCP at (\S+)/.exec(devOut)![1]!;
    client = (await connectHttpClient(url, 'legacy')).client;
    const r = await client.callTool({ name: 'weather_hello', arguments: { name: 'Ada' } });
    assert.deepEqual((r.structuredContent as { greeting: string }).greeting, 'Hello, Ada!');
    assert.match(devOut, /claude mcp add --transport http moonhub/);
  });

  it('an example script runs from the installed package against a server on any port', async () => {
    upstream = await startEverythingHttp();
    const script = join(
      prefix,
      'lib',
      'node_modules',
      'moonhub',
      'examples',
      'scripts',
      'chilkat-connect.lua',
    );
    const run = spawnSync('moonhub', ['run', script, upstream.url], {
      cwd: scratch,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /"connected": ?true/);
  });
});
