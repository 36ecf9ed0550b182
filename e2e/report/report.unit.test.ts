/**
 * The HTML report in a real browser: Debian's `chromium` (apt, see .ci/run) driven by
 * playwright-core, headless, with a fresh profile and no network. The page must render from
 * the file alone, show the expected number of allowed/denied cells, and explain a denied
 * cell on click. A screenshot is kept in e2e/artifacts/ (gitignored) for people.
 *
 * No chromium is a failure, not a skip: the report is a user-facing feature.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { runSimulate } from '../../src/cli/simulate.ts';
import { capture } from '../../src/cli/testdata/capture.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ARTIFACTS = path.join(ROOT, 'e2e/artifacts');
const CHROMIUM = process.env['TESSERA_CHROMIUM'] ?? '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('HTML report in headless Chromium', () => {
  it('renders the shop grid (3 allowed / 17 denied on TCP/5432), explains a denied cell on click, fetches nothing', { timeout: 60_000 }, async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; make setup does) or set TESSERA_CHROMIUM`);
    }
    const matrix = await capture(runSimulate, ['-f', path.join(ROOT, 'examples'), '--port', '5432', '--output', 'json']);
    const expected = (JSON.parse(matrix.stdout) as { summary: { allowed: number; denied: number } }).summary;
    expect(expected).toEqual({ pairs: 20, allowed: 3, denied: 17 });

    const html = await capture(runSimulate, ['-f', path.join(ROOT, 'examples'), '--port', '5432', '--output', 'html']);
    expect(html.code).toBe(0);
    mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, 'report.html');
    writeFileSync(file, html.stdout);

    const profile = mkdtempSync(path.join(tmpdir(), 'tessera-chromium-'));
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1400, height: 900 } });
    try {
      const requests: string[] = [];
      context.on('request', (r) => {
        if (!r.url().startsWith('file:')) requests.push(r.url());
      });
      const page = context.pages()[0] ?? (await context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`file://${file}`);
      await expect.poll(() => page.locator('td.cell').count()).toBe(25);
      expect(await page.locator('td.cell.allow').count()).toBe(expected.allowed);
      expect(await page.locator('td.cell.deny').count()).toBe(expected.denied);
      expect(await page.locator('td.cell.self').count()).toBe(5);
      expect(await page.locator('#policies tr.policy').count()).toBeGreaterThanOrEqual(5);

      // shop/frontend → data/db: denied at the end of tier default on the database's node.
      const pods = (JSON.parse(matrix.stdout) as { pods: string[] }).pods;
      const i = pods.indexOf('shop/frontend');
      const j = pods.indexOf('data/db');
      const cell = page.locator(`td.cell[data-i="${i}"][data-j="${j}"]`);
      expect(await cell.getAttribute('class')).toContain('deny');
      await cell.click();
      const detail = page.locator('#detail');
      await expect.poll(() => detail.textContent()).toContain('shop/frontend → data/db TCP/5432: DENIED');
      expect(await detail.locator('.ingress').textContent()).toBe('denied at the end of tier default: no policy in it allowed or passed the packet (defaultAction Deny)');
      expect(await detail.locator('.egress').textContent()).toBe('allowed by profile kns.shop egress[0] (Allow)');
      expect(await detail.locator('pre.walk').textContent()).toContain('NetworkPolicy data/allow-shop-api');

      await page.screenshot({ path: path.join(ARTIFACTS, 'report.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  });
});
