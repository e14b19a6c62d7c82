/**
 * A few client-mode conformance scenarios (a core one, an auth one, the 2025-03-26 back-compat
 * one, a 2026-07-28 one) against the hub's upstream layer through scripts/conformance-client.sh;
 * CI runs every scenario with the script itself. The suite needs Node 22, which the script
 * installs under .cache/conformance/ on its first run (network): this test runs only when that
 * is already there, and is skipped otherwise.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../helpers/moonhub-process.js';

const run = promisify(execFile);
const cache = join(ROOT, '.cache', 'conformance');
const installed = ['node22', 'stable', 'alpha'].every((d) => existsSync(join(cache, d)));
const script = join(ROOT, 'scripts', 'conformance-client.sh');

describe(
  'conformance suite, client mode',
  { skip: !installed && `not installed in ${cache}` },
  () => {
    it('passes core, auth, back-compat and 2026-07-28 scenarios', async () => {
      const scenarios =
        'tools_call auth/metadata-default auth/2025-03-26-oauth-metadata-backcompat request-metadata';
      const { stdout, stderr } = await run('bash', [script], {
        env: {
          ...process.env,
          CONFORMANCE_CLIENT_RUNS: 'stable alpha',
          CONFORMANCE_CLIENT_SCENARIOS: scenarios,
          CONFORMANCE_CLIENT_NO_BUILD: '1',
        },
        timeout: 300_000,
        maxBuffer: 64 * 1024 * 1024,
      }).catch((err: { stderr: string; stdout: string }) => err);
      const out = `${stdout}\n${stderr}`;
      assert.doesNotMatch(out, /✗ /, out.slice(-4000));
      assert.match(out, /conformance@0\.1\.16: 3 scenarios passed, 0 failed/);
      assert.match(out, /conformance@0\.2\.0-alpha\.12: 4 scenarios passed, 0 failed/);
    });
  },
);
