// Drives headless Chromium for the monitor's tests: one JSON command per
// line on stdin, one JSON reply per line on stdout. Every request the
// browser makes is logged (the test checks none leaves 127.0.0.1).
'use strict';
const { chromium } = require('playwright-core');
const readline = require('readline');

let browser, context;
const pages = [];
const requests = [];
const consoleLines = [];

const rowsOf = (page) => page.$$eval('#screen .row', (rs) => rs.map((r) => r.textContent));

const handlers = {
  async launch() {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    context.on('request', (r) => requests.push(r.method() + ' ' + r.url()));
    return {};
  },
  async open({ url }) {
    const page = await context.newPage();
    page.on('console', (m) => consoleLines.push(m.type() + ': ' + m.text()));
    page.on('pageerror', (e) => consoleLines.push('pageerror: ' + e.message));
    await page.goto(url);
    pages.push(page);
    return { page: pages.length - 1 };
  },
  async goto({ page, url }) {
    await pages[page || 0].goto(url);
    return {};
  },
  async waitShown({ page, node, timeout }) {
    const p = pages[page || 0];
    await p.waitForFunction((n) => {
      const s = document.getElementById('screen');
      return s && s.dataset.node === n && s.querySelectorAll('.row').length > 0;
    }, node, { timeout: timeout || 10000 });
    return {};
  },
  async select({ page, node }) {
    const p = pages[page || 0];
    await p.click(`nav button[data-node="${node}"]`);
    return handlers.waitShown({ page, node });
  },
  async rows({ page }) {
    return { rows: await rowsOf(pages[page || 0]) };
  },
  async waitRow({ page, text, timeout }) {
    const p = pages[page || 0];
    const t0 = Date.now();
    await p.waitForFunction((s) => [...document.querySelectorAll('#screen .row')].some((r) => r.textContent.includes(s)),
      text, { timeout: timeout || 10000, polling: 'raf' });
    return { ms: Date.now() - t0 };
  },
  async tabs({ page }) {
    return { tabs: await pages[page || 0].$$eval('nav button', (bs) => bs.map((b) => b.dataset.node)) };
  },
  async waitTabs({ page, present, absent, timeout }) {
    await pages[page || 0].waitForFunction(([pr, ab]) => {
      const have = new Set([...document.querySelectorAll('nav button')].map((b) => b.dataset.node));
      return pr.every((n) => have.has(n)) && ab.every((n) => !have.has(n));
    }, [present || [], absent || []], { timeout: timeout || 10000 });
    return handlers.tabs({ page });
  },
  async style({ page, text }) {
    return await pages[page || 0].$$eval('#screen .row span', (spans, t) => {
      const s = spans.find((x) => x.textContent === t);
      if (!s) return { found: false };
      const cs = getComputedStyle(s);
      return { found: true, color: cs.color, background: cs.backgroundColor, weight: cs.fontWeight,
        fontStyle: cs.fontStyle, decoration: cs.textDecorationLine, decorationStyle: cs.textDecorationStyle, className: s.className };
    }, text);
  },
  async text({ page, selector }) {
    return { text: await pages[page || 0].$eval(selector, (e) => e.textContent) };
  },
  async type({ page, text }) {
    const p = pages[page || 0];
    await p.click('#screen');
    await p.keyboard.type(text);
    await p.keyboard.press('Enter');
    await p.keyboard.press('Control+C');
    return {};
  },
  async paste({ page, text }) {
    // A drop or paste event on the screen: nothing must listen for it.
    await pages[page || 0].$eval('#screen', (s, t) => {
      const dt = new DataTransfer();
      dt.setData('text/plain', t);
      s.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true }));
    }, text);
    return {};
  },
  async rev({ page }) {
    return { rev: await pages[page || 0].$eval('#screen', (s) => s.dataset.rev || '') };
  },
  async eval({ page, expr }) {
    return { value: await pages[page || 0].evaluate(expr) };
  },
  async screenshot({ page, path }) {
    await pages[page || 0].screenshot({ path });
    return {};
  },
  async latencies({ page, marker }) {
    // A MutationObserver notes when each "MARKER <unix µs>" row first
    // appears; the latency is then minus the time the program printed it
    // (in ms, to the browser clock's resolution).
    await pages[page || 0].evaluate((m) => {
      window.__lat = [];
      const seen = new Set();
      const re = new RegExp(m + ' (\\d+)');
      const scan = (record) => {
        const now = Date.now();
        for (const r of document.querySelectorAll('#screen .row')) {
          const x = re.exec(r.textContent);
          if (x && !seen.has(x[1])) {
            seen.add(x[1]);
            if (record) window.__lat.push(now - Number(x[1]) / 1000);
          }
        }
      };
      scan(false); // rows already there were printed before we looked
      const record = () => scan(true);
      new MutationObserver(record).observe(document.getElementById('screen'), { subtree: true, childList: true, characterData: true });
    }, marker);
    return {};
  },
  async collect({ page }) {
    return { lat: await pages[page || 0].evaluate(() => window.__lat || []) };
  },
  async requests() {
    return { requests, console: consoleLines };
  },
  async close() {
    if (browser) await browser.close();
    return {};
  },
};

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
    const out = await handlers[msg.cmd](msg);
    process.stdout.write(JSON.stringify({ ok: true, ...out }) + '\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, error: String(e && e.stack || e) }) + '\n');
  }
  if (msg && msg.cmd === 'close') process.exit(0);
});
rl.on('close', async () => { if (browser) await browser.close(); process.exit(0); });
