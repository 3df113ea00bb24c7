// Headless Chromium on the admin port's page, driven by puppeteer-core: run by admin_page_test.py
// (which starts sluice, its upstream and the load). Usage:
//   node admin_page.mjs '{"part": "page"|"control", "admin": PORT, "proxy": PORT,
//                         "chromium": PATH, "artifacts": DIR, "token": TOKEN}'
// Prints each check as it passes; exits 1 on the first that fails.
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const options = JSON.parse(process.argv[2]);
const origin = `http://127.0.0.1:${options.admin}`;
const LAPTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

let checks = 0;
function check(condition, message) {
  if (!condition) throw new Error(message);
  checks += 1;
  console.log(`ok: ${message.split(':')[0]}`);
}
async function until(what, probe, seconds = 10) {
  const deadline = Date.now() + seconds * 1000;
  let last;
  while (Date.now() < deadline) {
    last = await probe();
    if (last) return last;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out after ${seconds} s waiting for ${what} (last: ${JSON.stringify(last)})`);
}
async function json(url, init) {
  const response = await fetch(url, init);
  return { status: response.status, body: await response.json().catch(() => null) };
}

// Every request a page makes, to check that none leaves the admin port's origin.
const requested = [];
async function open(browser, viewport, javaScript = true) {
  const page = await browser.newPage();
  await page.setViewport(viewport);
  await page.setJavaScriptEnabled(javaScript);
  page.on('request', (request) => requested.push(request.url()));
  page.on('pageerror', (error) => console.log(`page error: ${error.message}`));
  await page.goto(`${origin}/`, { waitUntil: 'load' });
  return page;
}
async function screenshot(page, name) {
  const file = path.join(options.artifacts, name);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot: ${file}`);
}
// The rows of the first table under `selector`, as their cells' text.
function rowsOf(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (rows) =>
    rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
}
async function noScriptRan(page, where) {
  const probe = await page.evaluate(() => window.__pwned);
  check(probe === undefined, `no script from the data ran (${where}): window.__pwned is ${probe}`);
  const injected = await page.$$eval('main img, main script, main [onerror]', (found) => found.length);
  check(injected === 0, `no element from the data (${where}): ${injected} img/script/onerror in main`);
}

async function pagePart(browser) {
  const page = await open(browser, LAPTOP);
  // The routes drawn: a chart per route with a line, and the table's rows, redrawn each second.
  const charts = () => page.$$eval('#charts .chart', (drawn) => drawn.map((chart) => ({
    route: chart.querySelector('h3').textContent, lines: chart.querySelectorAll('polyline').length,
  })));
  const drawn = await until('a chart per route, a line on api\'s', async () => {
    const now = await charts();
    return now.some((c) => c.route === 'api' && c.lines > 0) && now;
  });
  check(drawn.length === 2 && drawn.every((c) => c.lines > 0)
    && drawn.some((c) => c.route === options.markup_route),
    `a chart per busy route, the markup route's title as text: ${JSON.stringify(drawn)}`);
  const idle = await page.$eval('#charts .idle', (note) => note.textContent);
  check(idle.includes('ip'), `the idle routes named: ${idle}`);
  const routes = await rowsOf(page, '#traffic');
  const names = routes.map((row) => row[0]);
  check(names.includes('api') && names.includes(options.markup_route),
    `the routes' table lists api and the route named with markup, as text: ${JSON.stringify(names)}`);
  const api = routes.find((row) => row[0] === 'api');
  await until('api at more than 10 req/s', async () => {
    const now = await rowsOf(page, '#traffic');
    return Number(now.find((row) => row[0] === 'api')[1]) > 10;
  });
  check(Number(api[2]) > 0, `api's allowed total is counted: ${api}`);
  const status = await page.$eval('#status', (node) => node.textContent);
  check(status.startsWith('Updated'), `the page says it updates: ${status}`);
  const config = await page.$eval('#config', (node) => node.textContent);
  check(JSON.parse(config).routes.length === 3, 'the configuration is shown, parsed from /config');
  check(await page.$eval('#token-form', (form) => getComputedStyle(form).display !== 'none'),
    'the token form is shown');
  await noScriptRan(page, 'laptop');
  await screenshot(page, 'admin_page_1366x900.png');

  const phone = await open(browser, PHONE);
  await until('the phone page drawn', () => phone.$$eval('#charts .chart polyline', (c) => c.length > 0));
  const width = await phone.evaluate(() => document.documentElement.scrollWidth);
  check(width <= PHONE.width, `nothing wider than the phone's screen: ${width} px`);
  await noScriptRan(phone, 'phone');
  await screenshot(phone, 'admin_page_390x844.png');

  // Without JavaScript: the server's tables, with the numbers of the load.
  const plain = await open(browser, PHONE, false);
  const plainRoutes = await rowsOf(plain, '#traffic');
  check(plainRoutes.some((row) => row[0] === 'api' && Number(row[2]) > 0),
    `without JavaScript the routes' table is there: ${JSON.stringify(plainRoutes)}`);
  const limiters = await rowsOf(plain, '#limiters');
  check(limiters.some((row) => row[0] === 'per-user'), 'without JavaScript the limiters are there');
  const store = await rowsOf(plain, '#store');
  check(store.some((row) => row[0] === 'name' && row[1] === 'memory'), 'and the store');
  check((await plain.$$('#charts .chart')).length === 0, 'and no chart is drawn');
  const form = await plain.$eval('#token-form', (node) => getComputedStyle(node).display);
  check(form === 'none', `and no token form that could not work: display ${form}`);
  await noScriptRan(plain, 'without JavaScript');
  await screenshot(plain, 'admin_page_390x844_no_javascript.png');
}

async function controlPart(browser) {
  const page = await open(browser, LAPTOP);
  // The top keys as /top gives them, the key holding markup shown as text.
  const table = '#top .drawn[data-limiter="per-user"]';
  const matched = await until('the page\'s top keys to match /top', async () => {
    const top = await json(`${origin}/top?limiter=per-user&n=10`);
    const shown = (await rowsOf(page, table).catch(() => [])).map((row) => row[0]);
    const listed = top.body.keys.map((entry) => entry.key);
    return listed.length >= 3 && JSON.stringify(shown) === JSON.stringify(listed) && listed;
  }, 15);
  check(matched.some((key) => key.includes(options.markup_key)),
    `the top keys match /top, the subject with markup among them: ${JSON.stringify(matched)}`);
  const forms = await page.$$eval('#top form.override',
    (found) => found.map((form) => getComputedStyle(form).display));
  check(forms.length >= 3 && forms.every((display) => display === 'none'),
    `each key's override form stays closed until asked for: ${forms}`);
  await noScriptRan(page, 'top keys');
  await screenshot(page, 'admin_page_top_keys_1366x900.png');

  // 127.0.0.1 spends per-ip's 5 requests; then the page resets it.
  const ip = () => fetch(`http://127.0.0.1:${options.proxy}/ip`).then((r) => r.status);
  for (let i = 0; i < 6; ++i) await ip();
  check(await ip() === 429, 'the key is limited');
  const ipRow = async () => {
    const rows = await page.$$(`#top .drawn[data-limiter="per-ip"] tbody tr`);
    for (const row of rows) {
      if ((await row.$eval('td', (cell) => cell.textContent)).includes('127.0.0.1')) return row;
    }
    return null;
  };
  const useToken = async (value) => {
    await page.$eval('#token', (input, text) => { input.value = text; }, value);
    await page.click('#token-form button[type="submit"]');
  };
  // A wrong token: refused on the page, and the key stays limited.
  await useToken('not-the-token');
  await (await until('127.0.0.1 in the top keys', ipRow)).$eval('button.reset', (b) => b.click());
  const refused = await until('the refusal on the page', async () => {
    const row = await ipRow();
    const text = row && await row.$eval('td.actions .note', (note) => note.textContent);
    return text && text.startsWith('refused') && text;
  });
  check(refused.includes('401'), `a wrong token is refused on the page: ${refused}`);
  check(await ip() === 429, 'and the key is still limited');
  // The right token: the reset goes through and the key passes again.
  await useToken(options.token);
  await (await ipRow()).$eval('button.reset', (b) => b.click());
  await until('the reset', async () => {
    const row = await ipRow();
    return row && (await row.$eval('td.actions .note', (note) => note.textContent)) === 'reset';
  });
  check(await ip() === 200, 'after a reset from the page the key passes again');
}

const browser = await puppeteer.launch({
  executablePath: options.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = false;
try {
  fs.mkdirSync(options.artifacts, { recursive: true });
  await (options.part === 'control' ? controlPart(browser) : pagePart(browser));
  const away = requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'));
  check(away.length === 0, `no request left the admin port: ${JSON.stringify(away)}`);
  console.log(`passed: ${checks} checks, ${requested.length} requests from the pages`);
} catch (error) {
  console.log(`FAILED: ${error.message}`);
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
