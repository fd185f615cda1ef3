// The termsprawl monitor page: read-only. It opens one event stream and
// draws what arrives; it sends nothing to any node (there is no input
// path on the server either).
'use strict';
(() => {
  const base = location.pathname.endsWith('/') ? location.pathname : location.pathname + '/';
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  let es = null;          // the EventSource
  let show = '';          // the node whose screen is shown
  let state = { nodes: [], dialogs: [], watches: [] };
  let screen = null;      // {node, rev, cols, rows}
  let rowEls = [];
  // semantic.js reads which node is shown and its screen's size.
  window.termsprawlMonitor = { show: () => show, screen: () => screen };

  const wanted = () => decodeURIComponent((location.hash.match(/^#node=(.+)$/) || [])[1] || '');

  function setConn(kind, text) {
    const c = $('conn');
    c.className = 'conn ' + kind;
    c.textContent = text;
  }

  function connect() {
    if (es) es.close();
    const url = base + 'events' + (show ? '?show=' + encodeURIComponent(show) : '');
    es = new EventSource(url);
    es.addEventListener('frame', (e) => {
      const f = JSON.parse(e.data);
      setConn('live', 'live');
      setState(f.state);
      setScreen(f.screen);
    });
    es.addEventListener('state', (e) => setState(JSON.parse(e.data)));
    es.addEventListener('screen', (e) => applyScreen(JSON.parse(e.data)));
    es.onerror = () => {
      setConn('reconnecting', 'reconnecting… (is termsprawl running?)');
      // EventSource retries by itself after a network error; after a
      // refused answer it gives up, so start a new one.
      if (es.readyState === EventSource.CLOSED) setTimeout(connect, 1000);
    };
  }

  function select(id) {
    if (id === show) return;
    show = id;
    history.replaceState(null, '', id ? '#node=' + encodeURIComponent(id) : location.pathname);
    connect();
  }

  // ---- state: tabs, details, dialogs, watches ----

  function setState(st) {
    state = st;
    const ids = st.nodes.map((n) => n.terminal);
    if (!ids.includes(show)) {
      const w = wanted();
      const next = ids.includes(w) ? w : (ids[0] || '');
      if (next !== show) { drawState(); select(next); return; }
    }
    drawState();
  }

  function crashed(n) { return !!n.crash; }

  let tabsKey = '';

  function drawState() {
    const tabs = $('tabs');
    const asking = new Set(state.dialogs.map((d) => d.node));
    // Rebuilt only when a tab changes, so a click is never lost to a
    // button replaced under the pointer.
    const key = JSON.stringify([show, state.nodes.map((n) => [n.terminal, n.name, n.status, !!n.crash, asking.has(n.terminal)])]);
    if (key !== tabsKey) {
      tabsKey = key;
      drawTabs(tabs, asking);
    }
    $('empty').hidden = state.nodes.length > 0;
    $('fit').hidden = state.nodes.length === 0;
    drawDetails(state.nodes.find((n) => n.terminal === show));
    drawDialogs();
    drawWatches();
  }

  function drawTabs(tabs, asking) {
    tabs.replaceChildren();
    for (const n of state.nodes) {
      const b = el('button');
      b.type = 'button';
      b.dataset.node = n.terminal;
      b.setAttribute('role', 'tab');
      b.setAttribute('aria-selected', n.terminal === show ? 'true' : 'false');
      let dot = 'dot';
      if (asking.has(n.terminal)) dot += ' st-dialog';
      else if (crashed(n)) dot += ' st-crashed';
      else if (n.status !== 'running') dot += ' st-exited';
      b.append(el('span', dot));
      b.append(document.createTextNode(n.name && n.name !== n.terminal ? n.name + ' (' + n.terminal + ')' : n.terminal));
      b.addEventListener('click', () => select(n.terminal));
      tabs.append(b);
    }
  }

  function dl(pairs) {
    const d = el('dl');
    for (const [k, v, cls] of pairs) {
      d.append(el('dt', '', k));
      const dd = el('dd', cls || '');
      if (v instanceof Node) dd.append(v); else dd.textContent = v;
      d.append(dd);
    }
    return d;
  }

  function drawDetails(n) {
    const box = $('details');
    box.replaceChildren();
    if (!n) return;
    box.append(el('h2', '', 'Node ' + n.terminal));
    const status = n.status + (n.exit_code !== undefined && n.exit_code !== null ? ' (exit ' + n.exit_code + ')' : '');
    const pairs = [
      ['name', n.name || '—'],
      ['command', (n.command || []).join(' ') || '—'],
      ['status', status, n.status === 'running' ? 'okc' : (crashed(n) ? 'bad' : '')],
      ['owner', n.owner + (n.parent ? ' (launched by ' + n.parent + ')' : '')],
      ['size', n.columns + '×' + n.rows],
      ['revision', screen && screen.node === n.terminal ? String(screen.rev) : '—', 'rev'],
    ];
    if (n.exit_reason) pairs.push(['why', n.exit_reason, 'bad']);
    if (n.host) pairs.push(['host', n.host]);
    if (n.agent) pairs.push(['agent', n.agent]);
    if (n.agent || n.agent_state) {
      const a = n.agent_state;
      pairs.push(['agent state', a ? a.state + (a.message ? ': ' + a.message : '') : 'not reported', a ? '' : 'none']);
      if (a && a.needs_human) pairs.push(['needs a human', 'yes', 'bad']);
      if (a && a.since) pairs.push(['since', a.since]);
    }
    pairs.push(['recording', n.recording ? n.recording.path + ' (since ' + n.recording.since + ')' : 'off', n.recording ? 'bad' : 'none']);
    box.append(dl(pairs));
    if (n.crash) {
      const c = n.crash;
      box.append(el('h2', 'bad', 'Crash'));
      const what = c.signal ? 'signal ' + c.signal : 'exit ' + c.exit_code;
      const cp = [['ended by', what, 'bad'], ['after', (c.after_ms / 1000).toFixed(1) + ' s']];
      if (c.last_input) cp.push(['last input', c.last_input.kind + ': ' + c.last_input.summary]);
      box.append(dl(cp));
      if (c.screen_tail && c.screen_tail.length) box.append(el('pre', 'tail', c.screen_tail.join('\n')));
    }
  }

  function drawDialogs() {
    const box = $('dialogs');
    box.replaceChildren();
    if (!state.dialogs.length) { box.append(el('div', 'none', 'none')); return; }
    for (const d of state.dialogs) {
      const c = el('div', 'dialog');
      c.append(el('div', 'title', d.title));
      c.append(el('div', 'none', d.kind + ' from ' + d.node + ' · ' + d.dialog));
      // The full input (the title is a squeezed summary): what is allowed.
      if (d.tool) {
        let input = d.input || '';
        try { input = JSON.stringify(JSON.parse(input), null, 2); } catch (e) { /* shown as sent */ }
        c.append(el('pre', 'tail', d.tool + ' ' + input));
      }
      if (d.options && d.options.length) c.append(el('div', '', 'options: ' + d.options.join(' | ')));
      c.append(el('div', 'none', 'answer it in a terminal with:'));
      for (const cmd of d.answer) c.append(el('code', '', cmd));
      box.append(c);
    }
  }

  function drawWatches() {
    const box = $('watches');
    box.replaceChildren();
    if (!state.watches.length) { box.append(el('div', 'none', 'none')); return; }
    for (const w of state.watches) {
      box.append(el('div', 'watch', w.watch + ': ' + w.owner + ' waits on ' + w.terminal + ' for ' + w.what +
        (w.fired ? ' — fired' : '')));
    }
  }

  // ---- the screen ----

  const ulStyle = ['', 'solid', 'double', 'wavy', 'dotted', 'dashed'];
  const curClass = ['', 'cursor cur-block', 'cursor cur-underline', 'cursor cur-bar'];

  function span(r) {
    const s = el('span', '', r.t);
    const a = r.a || 0;
    if (r.f) s.style.color = r.f;
    if (r.b) s.style.backgroundColor = r.b;
    const cls = [];
    if (a & 1) cls.push('b');
    if (a & 2) cls.push('i');
    if (a & 4) cls.push('dim');
    if (a & 16) cls.push('inv');
    if (a & 32) s.style.color = 'transparent';
    const ul = (a >> 8) & 7;
    const lines = [];
    if (ul) lines.push('underline');
    if (a & 8) lines.push('line-through');
    if (lines.length) {
      s.style.textDecorationLine = lines.join(' ');
      if (ul) s.style.textDecorationStyle = ulStyle[ul] || 'solid';
      if (r.u) s.style.textDecorationColor = r.u;
    }
    if (r.c) cls.push(curClass[r.c]);
    if (r.w) cls.push('wide');
    if (cls.length) s.className = cls.join(' ');
    return s;
  }

  function drawLine(l) {
    const row = rowEls[l.y];
    if (!row) return;
    row.replaceChildren(...l.r.map(span));
  }

  function setScreen(s) {
    const scr = $('screen');
    scr.replaceChildren();
    rowEls = [];
    screen = s;
    if (!s) return;
    applyScreen(s);
  }

  function applyScreen(s) {
    if (!screen || s.node !== screen.node) return;
    const scr = $('screen');
    if (s.full) {
      scr.replaceChildren();
      rowEls = [];
      for (let y = 0; y < s.rows; y++) {
        const r = el('div', 'row');
        r.dataset.y = String(y);
        rowEls.push(r);
        scr.append(r);
      }
    }
    if (!s.full && s.scroll > 0) {
      // The rows moved up: the first ones go to the bottom, blank, for
      // the new lines to fill.
      for (const r of rowEls.splice(0, Math.min(s.scroll, rowEls.length))) {
        r.replaceChildren();
        scr.append(r);
        rowEls.push(r);
      }
      rowEls.forEach((r, y) => { r.dataset.y = String(y); });
      scr.dataset.scrolls = String(Number(scr.dataset.scrolls || 0) + 1);
    }
    for (const l of s.lines) drawLine(l);
    screen = s;
    scr.dataset.rev = String(s.rev);
    const rv = document.querySelector('#details dd.rev');
    if (rv) rv.textContent = String(s.rev);
    scr.dataset.node = s.node;
    if (s.full) fit();
  }

  // Scale the screen down to fit the view, never above its real size.
  function fit() {
    const f = $('fit');
    const scr = $('screen');
    f.style.transform = 'none';
    const view = $('view');
    const w = view.clientWidth - 20, h = view.clientHeight - 20;
    const sw = scr.offsetWidth, sh = scr.offsetHeight;
    if (!sw || !sh) return;
    const k = Math.min(1, w / sw, h / sh);
    f.style.transform = k < 1 ? 'scale(' + k + ')' : 'none';
    f.dataset.scale = String(k);
  }
  window.addEventListener('resize', fit);

  show = wanted();
  connect();
})();
