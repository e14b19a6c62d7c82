/**
 * The dashboard against hostile strings, in a real headless Chromium: a plugin whose tool and
 * prompt names, description and load error carry HTML, and an agent calling an unknown tool
 * whose name is HTML (shown in the live calls and recent failures). Every one must appear as
 * text: no element made from it, no script run (the page sets `window.__xss` if one does).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { createSession, makeHubDir, rawPost } from '../helpers/auth-hub.js';
import { adminToken, baseOf } from '../helpers/operations.js';
import { chromiumAvailable, launchBrowser } from '../helpers/browser.js';

const IMG = "<img src=x onerror='window.__xss=1'>";
const HOSTILE = `
mcp.tool("h.${IMG}", { description = "<script>window.__xss=2</script>" },
  function() return "<b>bold</b>" end)
mcp.prompt("h.<svg onload=window.__xss=3>", { description = "x" }, function() return "p" end)
`;
const BROKEN = `error("<iframe srcdoc='<script>parent.__xss=4</script>'></iframe>")`;

describe(
  'the dashboard shows hostile strings as text',
  { skip: !chromiumAvailable() && 'no chromium' },
  () => {
    let hub: MoonhubProcess;
    let browser: Awaited<ReturnType<typeof launchBrowser>>;
    let page: Page;
    let admin: string;
    let agent: string;

    before(async () => {
      const dir = makeHubDir({ h: HOSTILE, broken: BROKEN });
      const config = dir.write(
        'moonhub.yaml',
        'auth: { mode: token }\nplugins: { dirs: [plugins] }\nagents: { bot: { plugins: [h], builtins: [] } }\n',
      );
      hub = await startMoonhub(['--config', config, '--data', dir.data, '--no-watch']);
      admin = adminToken(dir.data, ['--config', config]);
      agent = createSession(['--config', config, '--data', dir.data, '--agent', 'bot']).token;
      browser = await launchBrowser();
      page = await browser.context.newPage();
    });
    after(async () => {
      await browser?.close();
      await hub?.stop();
    });

    it('renders names, descriptions, errors and called names as text; no script runs', async () => {
      await page.goto(`${baseOf(hub.url)}/`);
      await page.fill('#token', admin);
      await page.click('#login-form button');
      await page.waitForSelector('#plugin-rows tr[data-plugin="broken"]');
      await page.waitForSelector('#live-state:not([hidden])');
      const called = `<img src=y onerror="window.__xss=5">`;
      const r = await rawPost(
        hub.url,
        { method: 'tools/call', params: { name: called, arguments: {} } },
        { Authorization: `Bearer ${agent}` },
      );
      assert.match(r.text, /Unknown tool/);
      await page.waitForSelector('#live-calls li:has-text("onerror")', { timeout: 15_000 });
      const catalog = await page.locator('#catalog-rows').innerText();
      assert.ok(catalog.includes(`h.${IMG}`), 'the tool name is shown as written');
      assert.ok(catalog.includes('h.<svg onload=window.__xss=3>'));
      const broken = await page.locator('#plugin-rows tr[data-plugin="broken"]').innerText();
      assert.match(broken, /<iframe srcdoc=/);
      assert.ok((await page.locator('#live-calls').innerText()).includes(called));
      await page.waitForTimeout(300);
      assert.equal(await page.evaluate('globalThis.__xss'), undefined, 'no script ran');
      for (const tag of ['#app img', '#app svg[onload]', '#app iframe', '#app script'])
        assert.equal(await page.locator(tag).count(), 0, `no ${tag} made from a string`);
    });
  },
);
