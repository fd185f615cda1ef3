// The semantic tree beside the screen: the shown node's latest commit,
// one line a node; hovering a line outlines the node's bounds on the
// screen. Read-only: it only asks the monitor for the tree.
'use strict';
(() => {
  const base = location.pathname.endsWith('/') ? location.pathname : location.pathname + '/';
  const box = document.getElementById('semantic');
  let key = '';
  let outline = null;

  function clear() {
    if (outline) outline.remove();
    outline = null;
  }

  function outlineOf(n) {
    const mon = window.termsprawlMonitor;
    const scr = mon && mon.screen();
    const el = document.getElementById('screen');
    if (!scr || !el || !scr.cols || !scr.rows) return;
    clear();
    const b = n.bounds;
    outline = document.createElement('div');
    outline.className = 'sem-outline';
    outline.dataset.ref = n.ref;
    outline.style.left = (100 * b.column / scr.cols) + '%';
    outline.style.top = (100 * b.row / scr.rows) + '%';
    outline.style.width = (100 * b.width / scr.cols) + '%';
    outline.style.height = (100 * b.height / scr.rows) + '%';
    el.append(outline);
  }

  function draw(t) {
    const k = JSON.stringify(t);
    if (k === key) return;
    key = k;
    clear();
    box.replaceChildren();
    if (!t.available) {
      box.className = 'none';
      box.textContent = 'none published (the program has no probe)';
      return;
    }
    box.className = '';
    for (const n of t.nodes) {
      const d = document.createElement('div');
      d.className = 'sem-node';
      d.textContent = n.line;
      d.title = n.ref;
      d.addEventListener('mouseenter', () => { d.classList.add('hot'); outlineOf(n); });
      d.addEventListener('mouseleave', () => { d.classList.remove('hot'); clear(); });
      box.append(d);
    }
  }

  async function tick() {
    const mon = window.termsprawlMonitor;
    const id = mon && mon.show();
    if (id && !document.hidden) {
      try {
        const r = await fetch(base + 'semantic?node=' + encodeURIComponent(id), { cache: 'no-store' });
        if (r.ok) draw(await r.json());
      } catch (e) { /* the orchestrator is restarting: the next tick asks again */ }
    }
    setTimeout(tick, 500);
  }
  tick();
})();
