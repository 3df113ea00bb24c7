// The operators' page's script: redraws the server's tables every second from /stats and /top,
// draws each route's last ten minutes, and drives resets, overrides and reloads. It builds the
// page with createElement and textContent only: a key, path or header a client chose is text,
// never markup.
'use strict';

(() => {
  const DECISIONS = ['allowed', 'delayed', 'limited', 'denied', 'shadow_limited', 'no_route',
    'unauthorized'];
  const SECONDS = 600;
  const TOKEN = 'sluice-admin-token';

  let newest = 0;  // the history's newest sample this page holds
  const history = new Map();  // route -> decision -> requests per second, oldest first
  let topShown = true;  // false once /top is missing on this build

  // --- building the DOM ---------------------------------------------------------------------
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      node.setAttribute(name, value);
    }
    for (const child of children) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attributes) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      node.setAttribute(name, value);
    }
    return node;
  }
  function shown(value) {
    if (value === undefined || value === null) return '-';
    if (typeof value === 'boolean') return value ? 'yes' : 'no';
    return String(value);
  }
  // A table in a box that scrolls sideways; `cells` of a row are text or nodes.
  function table(headings, rows, empty) {
    const body = el('tbody');
    for (const cells of rows) {
      const row = el('tr');
      for (const cell of cells) {
        row.append(cell instanceof Node && cell.tagName === 'TD' ? cell : el('td', {}, cell));
      }
      body.append(row);
    }
    if (rows.length === 0 && empty) {
      body.append(el('tr', {}, el('td', { colspan: String(headings.length), class: 'none' }, empty)));
    }
    return el('div', { class: 'scroll' },
      el('table', {}, el('thead', {}, el('tr', {}, ...headings.map((h) => el('th', {}, h)))), body));
  }
  function sectionBody(id) {
    return document.querySelector(`#${id} > .body`);
  }
  // Replaces what a section shows after its `keep` first children (a chart, controls).
  function fill(id, ...nodes) {
    const body = sectionBody(id);
    if (!body) return;
    body.querySelectorAll(':scope > .drawn, :scope > .scroll, :scope > .errors, :scope > p.note')
      .forEach((node) => node.remove());
    const before = body.querySelector(':scope > details');
    for (const node of nodes) {
      body.insertBefore(node, before);
    }
  }

  // --- the admin port ---------------------------------------------------------------------
  function token() {
    return sessionStorage.getItem(TOKEN) || '';
  }
  async function call(method, path, body) {
    const headers = {};
    if (method !== 'GET' && token()) headers.Authorization = `Bearer ${token()}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(path, {
      method, headers, cache: 'no-store', credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (error) { json = null; }
    return { status: response.status, json, text };
  }
  function setStatus(text, bad) {
    const status = document.getElementById('status');
    status.textContent = text;
    status.classList.toggle('failed', Boolean(bad));
  }
  // What a write answered, for the line beside its button.
  function outcome(answer, done) {
    if (answer.status === 401 || answer.status === 403) {
      askForToken('The admin port refused the token: enter it again.');
      return `refused (${answer.status}): the admin token is missing or wrong`;
    }
    if (answer.status >= 400) {
      const detail = answer.json && (answer.json.detail || answer.json.title);
      return `failed (${answer.status})${detail ? `: ${detail}` : ''}`;
    }
    return done;
  }
  async function write(method, path, body, note, done) {
    note.textContent = '…';
    note.className = 'note';
    try {
      const answer = await call(method, path, body);
      note.textContent = outcome(answer, done);
      note.className = answer.status < 400 ? 'note ok' : 'note failed';
      return answer;
    } catch (error) {
      note.textContent = `failed: ${error.message}`;
      note.className = 'note failed';
      return null;
    }
  }

  // --- the token ----------------------------------------------------------------------------
  function askForToken(message) {
    const form = document.getElementById('token-form');
    form.hidden = false;
    document.getElementById('token-state').textContent = message;
    if (message) sessionStorage.removeItem(TOKEN);
  }
  function setUpToken() {
    const form = document.getElementById('token-form');
    form.hidden = false;
    document.getElementById('token-state').textContent = token() ? 'a token is set for this tab' : '';
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = document.getElementById('token');
      sessionStorage.setItem(TOKEN, input.value);
      input.value = '';
      document.getElementById('token-state').textContent = 'a token is set for this tab';
    });
  }

  // --- traffic ------------------------------------------------------------------------------
  function merge(window) {
    if (window.newest < newest) {  // the process restarted: start again
      history.clear();
    }
    const count = Math.min(window.seconds, SECONDS);
    newest = window.newest;
    if (count === 0) return;
    const zeros = () => new Array(SECONDS).fill(0);
    for (const route of window.routes) {
      if (!history.has(route.route)) {
        history.set(route.route, Object.fromEntries(DECISIONS.map((d) => [d, zeros()])));
      }
    }
    for (const [name, decisions] of history) {
      const route = window.routes.find((r) => r.route === name);
      for (const decision of DECISIONS) {
        const fresh = (route && route.per_second[decision]) || new Array(count).fill(0);
        decisions[decision] = decisions[decision].slice(count).concat(fresh.slice(-count));
      }
    }
  }
  function chart(route, decisions) {
    const seen = DECISIONS.filter((d) => decisions[d].some((v) => v > 0));
    const top = Math.max(1, ...seen.flatMap((d) => decisions[d]));
    const height = 100;
    const drawing = svg('svg', {
      viewBox: `0 0 ${SECONDS - 1} ${height}`, preserveAspectRatio: 'none', role: 'img',
      'aria-label': `requests per second on route ${route || '(no route)'}`,
    });
    for (const decision of seen) {
      const points = decisions[decision]
        .map((v, i) => `${i},${(height - (v / top) * (height - 2)).toFixed(1)}`).join(' ');
      drawing.append(svg('polyline', { points, class: `line d-${decision}` }));
    }
    const last = (d) => decisions[d].slice(-10).reduce((a, b) => a + b, 0) / 10;
    return el('div', { class: 'chart' },
      el('h3', {}, route || '(no route)'),
      el('div', { class: 'legend' },
        ...seen.map((d) => el('span', { class: `d-${d}` }, `${d} ${last(d).toFixed(1)}/s`)),
        el('span', {}, `peak ${top}/s`)),
      drawing,
      el('div', { class: 'axis' }, el('span', {}, '-10 min'), el('span', {}, 'now')));
  }
  function drawTraffic(stats) {
    // A chart for each route with requests in the ten minutes; the idle ones named below them.
    const busy = [...history].filter(([, decisions]) => DECISIONS.some((d) => decisions[d].some((v) => v > 0)));
    const idle = [...history.keys()].filter((route) => !busy.some(([name]) => name === route));
    const charts = document.getElementById('charts');
    charts.replaceChildren(...busy.map(([route, decisions]) => chart(route, decisions)));
    if (idle.length > 0) {
      charts.append(el('p', { class: 'idle' },
        `No request in ten minutes: ${idle.map((route) => route || '(no route)').join(', ')}`));
    }
    const recent = (route) => {
      const decisions = history.get(route);
      if (!decisions) return '0.0';
      const sum = DECISIONS.reduce((all, d) => all + decisions[d].slice(-10).reduce((a, b) => a + b, 0), 0);
      return (sum / 10).toFixed(1);
    };
    const rows = stats.routes.map((route) => [route.route || '(no route)', recent(route.route),
      ...DECISIONS.map((d) => shown(route.total[d]))]);
    fill('traffic', table(['route', 'req/s (10 s)', ...DECISIONS], rows, 'no route has had a request yet'));
  }

  // --- limiters and their top keys ----------------------------------------------------------
  function drawLimiters(stats) {
    fill('limiters', table(['limiter', 'algorithm', 'keys', 'lease', 'overshoot bound'],
      stats.limiters.map((l) => [l.limiter, l.algorithm, shown(l.keys), shown(l.lease),
        shown(l.overshoot_bound)]), 'no limiter'));
  }
  const keyPath = (limiter, key) =>
    `/limiters/${encodeURIComponent(limiter)}/${encodeURIComponent(key)}`;
  function actions(limiter, key) {
    const note = el('span', { class: 'note' });
    const reset = el('button', { type: 'button', class: 'reset' }, 'reset');
    reset.addEventListener('click', () =>
      write('DELETE', keyPath(limiter, key), undefined, note, 'reset'));
    const limit = el('input', {
      type: 'number', min: '0', required: '', placeholder: 'limit', 'aria-label': 'limit',
    });
    const period = el('input', { type: 'text', value: '1h', class: 'for', 'aria-label': 'for' });
    const apply = el('button', { type: 'submit' }, 'apply');
    const form = el('form', { class: 'override' }, limit, period, apply);
    form.hidden = true;
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      write('PUT', keyPath(limiter, key), { limit: Number(limit.value), for: period.value }, note,
        `overridden for ${period.value}`);
    });
    const override = el('button', { type: 'button', class: 'override-open' }, 'override');
    override.addEventListener('click', () => { form.hidden = !form.hidden; });
    return el('td', { class: 'actions' }, reset, ' ', override, form, ' ', note);
  }
  // Rows keep their buttons (and an open override form) while their key stays listed.
  const topRows = new Map();
  function drawTop(top) {
    const nodes = [];
    const listed = new Set();
    for (const limiter of top.limiters || []) {
      nodes.push(el('h3', { class: 'drawn' }, limiter.limiter));
      const rows = limiter.keys.map((entry) => {
        const id = `${limiter.limiter}\u0000${entry.key}`;
        listed.add(id);
        // A secret key is listed by its hash, which cannot name it in a write: no buttons.
        if (!topRows.has(id)) {
          topRows.set(id, entry.secret
            ? el('td', { class: 'actions note' }, 'secret key: act on it by its value')
            : actions(limiter.limiter, entry.key));
        }
        const key = el('td', { class: 'key' }, entry.key);
        if (entry.secret) key.append(el('span', { class: 'secret' }, '(hashed)'));
        return [key, shown(entry.requests), shown(entry.limited), shown(entry.remaining),
          topRows.get(id)];
      });
      const drawn = table(['key', 'requests', 'limited', 'remaining', ''], rows, 'no key in the last minute');
      drawn.classList.add('drawn');
      drawn.dataset.limiter = limiter.limiter;
      nodes.push(drawn);
    }
    for (const id of [...topRows.keys()]) {
      if (!listed.has(id)) topRows.delete(id);
    }
    if (nodes.length === 0) nodes.push(el('p', { class: 'note' }, 'no limiter'));
    fill('top', ...nodes);
  }

  // --- store, upstreams, protocols ----------------------------------------------------------
  function drawStore(stats) {
    const rows = Object.entries(stats.store).filter(([, value]) => !Array.isArray(value))
      .map(([name, value]) => {
        const cell = el('td', {}, shown(value));
        if (name === 'available') cell.className = value ? 'ok' : 'failed';
        return [name, cell];
      });
    for (const node of stats.store.nodes || []) {
      const cell = el('td', { class: node.breaker === 'open' ? 'failed' : 'ok' },
        `breaker ${node.breaker}${node.serving ? '' : ', no loop sends to it'}`);
      rows.push([`node ${node.address}`, cell]);
    }
    for (const provider of stats.jwks) {
      rows.push([`JWKS ${provider.provider}`, `${provider.ok} fetched, ${provider.failed} failed`]);
    }
    fill('store', table(['', 'value'], rows));
  }
  function drawUpstreams(stats) {
    fill('upstreams', table(['upstream', 'connect', 'timeout', 'broken'],
      stats.upstream_errors.map((u) => [u.upstream, shown(u.connect), shown(u.timeout), shown(u.broken)]),
      'no upstream used yet'));
  }
  function drawProtocols(stats) {
    fill('protocols', table(['', 'count'], [
      ['open connections', shown(stats.connections.open)],
      ['parked connections', shown(stats.connections.parked)],
      ['TLS handshakes: full', shown(stats.tls_handshakes.full)],
      ['TLS handshakes: resumed', shown(stats.tls_handshakes.resumed)],
      ['TLS handshakes: failed', shown(stats.tls_handshakes.failed)],
      ['HTTP/2 connections', shown(stats.http2.connections)],
      ['HTTP/2 GOAWAYs', shown(stats.http2.goaways)],
      ['access log lines dropped', shown(stats.access_log_dropped)],
    ]));
  }

  // --- the configuration and its reload -----------------------------------------------------
  function drawReload(stats) {
    const rows = [['reloads', `${stats.reloads.succeeded} succeeded, ${stats.reloads.failed} failed`]];
    const last = stats.last_reload;
    const errors = el('ul', { class: 'errors', id: 'reload-errors' });
    if (last) {
      rows.push(['last reload', `${last.ok ? 'success' : 'failure'}, ${last.trigger}, ${last.at}`]);
      for (const field of last.restart_needed) rows.push(['needs a restart', field]);
      for (const error of last.errors) errors.append(el('li', {}, error));
    } else {
      rows.push(['last reload', 'none since the start']);
    }
    fill('reload', table(['', ''], rows), errors);
  }
  async function showConfig() {
    try {
      const answer = await call('GET', '/config');
      if (answer.json) {
        document.getElementById('config').textContent = JSON.stringify(answer.json, null, 2);
      }
    } catch (error) { /* the next reload shows it */ }
  }
  function setUpReload() {
    const note = el('span', { class: 'note' });
    const button = el('button', { type: 'button', id: 'reload-button' }, 'reload the configuration');
    button.addEventListener('click', async () => {
      const answer = await write('POST', '/reload', undefined, note, 'reloaded');
      if (answer && answer.json && answer.json.result === 'failure') {
        note.textContent = `failed: ${answer.json.errors.length} error(s), the old configuration stays`;
      }
      await showConfig();
      await tick();
    });
    document.getElementById('reload-controls').replaceChildren(button, ' ', note);
  }

  // --- every second -------------------------------------------------------------------------
  let busy = false;
  async function tick() {
    if (busy) return;
    busy = true;
    try {
      const answer = await call('GET', `/stats?since=${newest}`);
      if (answer.status !== 200 || !answer.json) throw new Error(`/stats answered ${answer.status}`);
      const stats = answer.json;
      merge(stats.history);
      drawTraffic(stats);
      drawLimiters(stats);
      drawStore(stats);
      drawUpstreams(stats);
      drawProtocols(stats);
      drawReload(stats);
      if (topShown) {
        const top = await call('GET', '/top?n=10');
        if (top.status === 404) {
          topShown = false;
          fill('top', el('p', { class: 'note' }, 'This build has no /top.'));
        } else if (top.json) {
          drawTop(top.json);
        }
      }
      setStatus(`Updated ${new Date().toLocaleTimeString()}, every second.`);
    } catch (error) {
      setStatus(`The admin port does not answer: ${error.message}`, true);
    } finally {
      busy = false;
    }
  }

  function start() {
    document.documentElement.classList.add('live');
    setUpToken();
    setUpReload();
    showConfig();
    tick();
    setInterval(() => { if (!document.hidden) tick(); }, 1000);
  }
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
