/**
 * The dashboard in a real headless Chromium against a real hub (token auth): signing in with an
 * admin token (a wrong one refused), plugins and tools with their owners, a broken plugin's
 * error with its file and line, a call appearing live while a client makes it, a session created
 * (token shown once) and another revoked from the page and then refused. Screenshots of the main
 * views go to docs/images/ for the README.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { BrowserContext, Page } from 'playwright-core';
import { ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { connectWithToken, createSession, makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { adminToken, baseOf } from '../helpers/operations.js';
import { chromiumAvailable, launchBrowser } from '../helpers/browser.js';

const IMAGES = join(ROOT, 'docs', 'images');

const CALC = `
mcp.tool("calc.echo", { description = "Echo the text back",
  input_schema = { type = "object", properties = { text = { type = "string" } } } },
  function(params) return { echoed = params.text } end)
mcp.tool("calc.add", { description = "Add two numbers" }, function(p) return (p.a or 0) + (p.b or 0) end)
mcp.prompt("calc-help", { description = "How to use calc" }, function() return "use calc.echo" end)
`;
const BROKEN = `-- a plugin with a mistake on line 3
mcp.tool("broken.ok", {}, function() return 1 end)
local x = = 1
`;
const CONFIG = `
auth: { mode: token }
agents:
  bot: {}
  reviewer: { plugins: [calc], builtins: [] }
`;

describe('the dashboard in a real browser', { skip: !chromiumAvailable() && 'no chromium' }, () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  let admin: string;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let bot: { session_uuid: string; token: string };
  let client: Client;

  before(async () => {
    mkdirSync(IMAGES, { recursive: true });
    dir = makeHubDir({ calc: CALC, broken: BROKEN });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--plugins', dir.plugins, '--data', dir.data]);
    base = baseOf(hub.url);
    admin = adminToken(dir.data, ['--config', config]);
    bot = createSession([
      '--config',
      config,
      '--data',
      dir.data,
      '--agent',
      'bot',
      '--url',
      hub.url,
    ]);
    createSession([
      '--config',
      config,
      '--data',
      dir.data,
      '--agent',
      'reviewer',
      '--url',
      hub.url,
    ]);
    ({ client } = await connectWithToken(hub.url, 'modern', bot.token));
    browser = await launchBrowser();
    context = browser.context;
    page = await context.newPage();
    await page.setViewportSize({ width: 1280, height: 900 });
    page.on('dialog', (d) => void d.accept());
  });

  after(async () => {
    await client?.close().catch(() => {});
    await browser?.close();
    await hub?.stop();
  });

  it('refuses a wrong token and signs in with an admin token', async () => {
    const res = await fetch(`${base}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.doesNotMatch(await res.text(), /mhs_[a-z0-9]/i, 'the page holds no token');
    await page.goto(`${base}/`);
    await page.fill('#token', 'mhs_wrong.token');
    await page.click('#login-form button');
    await page.waitForSelector('#login-error:has-text("not an admin token")');
    // An agent's token is not an admin token either.
    await page.fill('#token', bot.token);
    await page.click('#login-form button');
    await page.waitForSelector('#login-error:has-text("not an admin token")');
    await page.fill('#token', admin);
    await page.click('#login-form button');
    await page.waitForSelector('#plugin-rows tr[data-plugin="calc"]');
    assert.equal(await page.isVisible('#login'), false);
  });

  it('shows the plugins, a broken one with its file and line, and each tool with its owner', async () => {
    const calc = page.locator('#plugin-rows tr[data-plugin="calc"]');
    assert.match(await calc.innerText(), /loaded/);
    const broken = page.locator('#plugin-rows tr[data-plugin="broken"]');
    const text = await broken.innerText();
    assert.match(text, /failed/);
    assert.match(text, /broken\.lua:3/);
    const catalog = await page.locator('#catalog-rows').innerText();
    assert.match(catalog, /tool\s+calc\.echo\s+calc/);
    assert.match(catalog, /prompt\s+calc-help\s+calc/);
    assert.match(catalog, /tool\s+hub_status\s+builtin:hub_status/);
    await page.fill('#catalog-filter', 'echo');
    assert.equal(await page.locator('#catalog-rows tr').count(), 1);
    await page.fill('#catalog-filter', '');
    const reviewer = await page.locator('#session-rows tr:has-text("reviewer")').innerText();
    assert.match(reviewer, /\tcalc\t/, "the reviewer's view holds only calc");
    const botRow = await page
      .locator(`#session-rows tr[data-session="${bot.session_uuid}"]`)
      .innerText();
    assert.match(botRow, /builtin:search_tools, calc\t/, 'an agent without lists sees everything');
  });

  it('shows a call live while a client makes it', async () => {
    await page.waitForSelector('#live-state:not([hidden])');
    for (let i = 0; i < 3; i++)
      await client.callTool({ name: 'calc.echo', arguments: { text: `hi ${i}` } });
    await client.callTool({ name: 'calc.add', arguments: { a: 1, b: 2 } });
    await page.waitForSelector('#live-calls li:has-text("tools/call calc.add"):has-text("ok")', {
      timeout: 15_000,
    });
    const item = await page.locator('#live-calls li').first().innerText();
    assert.match(item, /bot/, 'the agent is named');
    assert.doesNotMatch(await page.content(), /hi 0/, 'no argument values on the page');
    await page.screenshot({ path: join(IMAGES, 'dashboard-overview.png'), fullPage: true });
  });

  it('creates a session (token shown once) and revokes another, whose client is then refused', async () => {
    await page.fill('#new-agent', 'bot');
    await page.fill('#new-name', 'from-the-page');
    await page.click('#session-form button');
    await page.waitForSelector('#new-token:not([hidden])');
    assert.match(await page.locator('#new-token-value').innerText(), /^mhs_/);
    await page.click('#new-token-close');
    assert.equal(await page.locator('#new-token-value').innerText(), '');
    await page.waitForSelector('#session-rows tr:has-text("from-the-page")');

    const row = page.locator(`#session-rows tr[data-session="${bot.session_uuid}"]`);
    await page.locator('#sessions').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(IMAGES, 'dashboard-sessions.png'), fullPage: false });
    await row.locator('button:has-text("Revoke")').click();
    await row.waitFor({ state: 'detached', timeout: 15_000 });
    await assert.rejects(client.callTool({ name: 'calc.echo', arguments: { text: 'again' } }));
    const direct = await fetch(hub.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${bot.token}` },
      body: '{}',
    });
    assert.equal(direct.status, 403);
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/`);
    await page.waitForSelector('#plugin-rows tr[data-plugin="calc"]');
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
    assert.ok(width <= 390, `no sideways scrolling (page is ${width}px wide)`);
    await page.screenshot({ path: join(IMAGES, 'dashboard-phone.png'), fullPage: false });
  });
});
