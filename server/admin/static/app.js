// Rowfate admin page: plain JavaScript, no framework, no build step, nothing
// loaded from elsewhere. It speaks the HTTP API v1 with the bearer token the
// person pasted, kept in sessionStorage so that it dies with the tab.
//
// Everything the API returns is put on the page as text (el() builds nodes
// and sets textContent), never as HTML: file contents are untrusted.
(function () {
  'use strict';

  const TOKEN_KEY = 'rowfate.token';
  const PAGE_SIZE = 50; // rows and batches per page: never the whole batch
  const POLL_MS = 2000; // polling period while the event stream is down
  const RENDER_MS = 50; // live updates are drawn at most this often
  const BATCH_STATUSES = ['ingesting', 'running', 'finished', 'cancelled'];
  const ROW_STATES = ['valid', 'invalid', 'processing', 'retrying', 'succeeded', 'failed', 'dead', 'unknown', 'skipped', 'cancelled'];
  // Row states that always have a tab; the others get one when they have
  // rows, so that the tabs fit on one line.
  const ALWAYS_TABS = new Set(['invalid', 'failed', 'dead', 'unknown', 'succeeded', 'skipped']);
  // Rows a person may still edit or skip; the server has the last word.
  const OPEN_TO_REVIEW = new Set(['valid', 'invalid', 'failed', 'dead', 'unknown']);

  const session = { token: sessionStorage.getItem(TOKEN_KEY) || '', me: null };
  // cleanups run when the page leaves the current view: they close event
  // streams and stop timers.
  let cleanups = [];
  // view counts navigations, so that a view whose data arrives after the
  // person has moved on draws nothing.
  let view = 0;

  const $ = (id) => document.getElementById(id);

  // el builds an element. props: class, text, on<event> handlers, and
  // attributes (true for a bare attribute; null, undefined and false are
  // left out). Children are nodes or strings (always text), nested arrays
  // allowed.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    append(e, children);
    return e;
  }

  // fill replaces parent's children. Unlike replaceChildren, it leaves out
  // null and false, which the DOM would insert as the text "null".
  function fill(parent, ...children) {
    parent.replaceChildren();
    append(parent, children);
  }

  function append(parent, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(parent, c);
      else parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  // ---- API ----

  class ApiError extends Error {
    constructor(status, code, detail) {
      super(detail);
      this.status = status;
      this.code = code;
      this.detail = detail;
    }
  }

  // api calls the API. opts: json (a body to send as JSON), form (a
  // FormData), token (log-in check: this token, and a 401 is just an
  // error), raw (return the Response), headers.
  async function api(method, path, opts) {
    opts = opts || {};
    const headers = Object.assign({ Authorization: 'Bearer ' + (opts.token || session.token), Accept: 'application/json' }, opts.headers || {});
    let body;
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.form) {
      body = opts.form; // the browser sets the multipart boundary
    }
    let resp;
    try {
      resp = await fetch(path, { method, headers, body, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      throw new ApiError(0, 'network', 'The server cannot be reached (' + e.message + ').');
    }
    if (!resp.ok) {
      const err = await problem(resp);
      if (resp.status === 401 && !opts.token) {
        // The token was revoked or expired: back to the log-in form.
        endSession();
        location.hash = '#/login';
      }
      throw err;
    }
    if (opts.raw) return resp;
    if (resp.status === 204) return null;
    return resp.json();
  }

  // problem reads an error response: application/problem+json, whose
  // detail is meant for people.
  async function problem(resp) {
    let body = null;
    try {
      body = JSON.parse(await resp.text());
    } catch (_) { /* not JSON: a proxy's page, say */ }
    const legacy = body && body.error && typeof body.error === 'object' ? body.error : null;
    const detail = (body && (body.detail || body.title)) || (legacy && legacy.message) ||
      ('The server answered ' + resp.status + ' ' + resp.statusText + '.');
    const code = (body && body.code) || (legacy && legacy.code) || '';
    return new ApiError(resp.status, code, String(detail));
  }

  // download fetches a file with the bearer header, which a plain link
  // cannot send, and saves it through a blob URL.
  async function download(path, fallbackName) {
    const resp = await api('GET', path, { raw: true, headers: { Accept: '*/*' } });
    const blob = await resp.blob();
    const name = fileName(resp.headers.get('Content-Disposition')) || fallbackName;
    const url = URL.createObjectURL(blob);
    const a = el('a', { href: url, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    // Revoking at once can abort the download in some browsers.
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  function fileName(disposition) {
    if (!disposition) return '';
    let m = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(disposition);
    if (m) {
      try { return decodeURIComponent(m[1].trim()); } catch (_) { /* fall through */ }
    }
    m = /filename\s*=\s*"([^"]*)"/i.exec(disposition) || /filename\s*=\s*([^;]+)/i.exec(disposition);
    return m ? m[1].trim() : '';
  }

  // ---- messages ----

  function showError(err) {
    const text = err instanceof ApiError ? err.detail : (err && err.message) || String(err);
    $('alert').textContent = text;
    if (!(err instanceof ApiError)) console.error(err);
  }

  function notify(text) {
    $('notice').textContent = text;
  }

  function clearMessages() {
    $('alert').textContent = '';
    $('notice').textContent = '';
  }

  // guard runs an action, showing its error, with the button disabled
  // meanwhile so that a double click acts once.
  async function guard(button, fn) {
    clearMessages();
    if (button) button.disabled = true;
    try {
      await fn();
    } catch (e) {
      showError(e);
    } finally {
      if (button) button.disabled = false;
    }
  }

  // ---- formatting ----

  const nf = new Intl.NumberFormat('en-US');
  const fmtInt = (n) => nf.format(Math.round(Number(n) || 0));

  function fmtTime(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    if (isNaN(d)) return String(iso);
    const p = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }

  function fmtDuration(sec) {
    if (!(sec >= 0) || !isFinite(sec)) return '—';
    sec = Math.ceil(sec);
    if (sec < 60) return sec + ' s';
    const m = Math.floor(sec / 60);
    if (m < 60) return m + ' min ' + (sec % 60) + ' s';
    return Math.floor(m / 60) + ' h ' + (m % 60) + ' min';
  }

  function percent(done, total) {
    if (!(total > 0)) return 0;
    // Floor, so that 100% means every row is done.
    return Math.min(100, Math.floor((done * 100) / total));
  }

  const cssName = (s) => String(s).replace(/[^a-z0-9_-]/gi, '');

  function chip(text, id) {
    return el('span', { class: 'chip chip-' + cssName(text), id }, text);
  }

  function statusChips(status, paused) {
    // A finished or cancelled batch may keep its paused flag; it no
    // longer means anything.
    const over = status === 'finished' || status === 'cancelled';
    return [chip(status), paused && !over ? chip('paused') : null];
  }

  // progressBar returns a div with role=progressbar; setProgress moves it.
  function progressBar(done, total, label, extra) {
    const b = el('div', Object.assign({ class: 'bar', role: 'progressbar', 'aria-label': label, 'aria-valuemin': 0 }, extra || {}), el('div', { class: 'fill' }));
    setProgress(b, done, total);
    return b;
  }

  function setProgress(b, done, total) {
    done = Number(done) || 0;
    total = Number(total) || 0;
    const width = total > 0 ? Math.min(100, (done * 100) / total) : 0;
    b.firstChild.style.width = width.toFixed(2) + '%';
    b.setAttribute('aria-valuemax', String(total));
    b.setAttribute('aria-valuenow', String(Math.min(done, total)));
    b.setAttribute('aria-valuetext', fmtInt(done) + ' of ' + fmtInt(total) + ' rows (' + percent(done, total) + '%)');
    b.classList.toggle('done', total > 0 && done >= total);
  }

  function heading(...children) {
    return el('h1', { tabindex: '-1' }, children);
  }

  function hashWith(base, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
    const s = q.toString();
    return base + (s ? '?' + s : '');
  }

  // ---- session ----

  const canAct = () => !!session.me && session.me.role === 'admin';

  function showSession() {
    const on = !!session.me;
    $('nav').hidden = !on;
    $('session').hidden = !on;
    if (on) {
      $('session-tenant').textContent = session.me.tenant_id || '';
      const role = $('session-role');
      role.textContent = session.me.role || '';
      role.className = 'chip chip-' + cssName(session.me.role || '');
    }
  }

  function endSession() {
    session.token = '';
    session.me = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showSession();
  }

  // ---- router ----

  function parseHash() {
    const h = location.hash.replace(/^#/, '');
    const i = h.indexOf('?');
    const path = i < 0 ? h : h.slice(0, i);
    return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), q: new URLSearchParams(i < 0 ? '' : h.slice(i + 1)) };
  }

  async function route() {
    // In-page anchors are not routes.
    if (location.hash && !location.hash.startsWith('#/')) return;
    for (const f of cleanups.splice(0)) {
      try { f(); } catch (_) { /* keep cleaning */ }
    }
    const v = ++view;
    const alive = () => v === view;
    clearMessages();
    const { parts, q } = parseHash();
    const main = $('main');

    if (!session.me && session.token) {
      try {
        session.me = await api('GET', '/v1/me', { token: session.token });
      } catch (e) {
        endSession();
        if (e.status !== 401) showError(e);
      }
      if (!alive()) return;
      showSession();
    }
    if (!session.me) {
      const next = parts[0] === 'login' || parts.length === 0 ? '' : location.hash;
      return viewLogin(main, next);
    }
    for (const a of document.querySelectorAll('#nav a')) {
      if (a.dataset.nav === (parts[0] || 'batches')) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    try {
      if (parts.length === 0 || parts[0] === 'login') {
        location.replace('#/batches');
      } else if (parts[0] === 'batches' && parts.length === 1) {
        await viewBatches(main, alive, q);
      } else if (parts[0] === 'batches' && parts.length === 2 && /^\d+$/.test(parts[1])) {
        await viewBatch(main, alive, parts[1]);
      } else if (parts[0] === 'batches' && parts.length === 3 && /^\d+$/.test(parts[1]) && parts[2] === 'rows') {
        await viewRows(main, alive, parts[1], q);
      } else if (parts[0] === 'import' && parts.length === 1) {
        await viewImport(main, alive);
      } else {
        main.replaceChildren(heading('Not found'), el('p', null, 'There is no such page. ', el('a', { href: '#/batches' }, 'See the batches.')));
      }
    } catch (e) {
      if (alive()) showError(e);
    }
  }

  // show replaces the view and moves focus to its heading, so that screen
  // readers announce the new page and Tab starts from it.
  function show(main, ...children) {
    fill(main, children);
    const h = main.querySelector('h1');
    if (h) h.focus({ preventScroll: true });
  }

  function loading(main, title) {
    main.replaceChildren(heading(title), el('p', { class: 'muted' }, 'Loading…'));
  }

  // ---- log in ----

  function viewLogin(main, next) {
    const input = el('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'token-help' });
    const submit = el('button', { type: 'submit', id: 'login-submit' }, 'Log in');
    const form = el('form', { class: 'login', 'aria-labelledby': 'login-title' },
      el('h1', { id: 'login-title', tabindex: '-1' }, 'Log in to Rowfate'),
      el('div', { class: 'field' },
        el('label', { for: 'token' }, 'API token'),
        input,
        el('span', { id: 'token-help', class: 'muted' }, 'Create one with: batchctl token create --tenant T --role admin|viewer --name N')),
      submit);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      guard(submit, async () => {
        let me;
        try {
          me = await api('GET', '/v1/me', { token });
        } catch (e) {
          if (e.status === 401) throw new ApiError(401, e.code, 'This token is not valid, or it was revoked: ' + e.detail);
          throw e;
        }
        session.token = token;
        session.me = me;
        sessionStorage.setItem(TOKEN_KEY, token);
        showSession();
        const target = next || '#/batches';
        if (location.hash === target) route();
        else location.hash = target;
      });
    });
    main.replaceChildren(form);
    input.focus();
  }

  // ---- batches ----

  async function viewBatches(main, alive, q) {
    const status = q.get('status') || '';
    const before = q.get('before') || '';
    loading(main, 'Batches');
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (status) params.set('status', status);
    if (before) params.set('before', before);
    const data = await api('GET', '/v1/batches?' + params);
    if (!alive()) return;

    const filter = el('select', { id: 'status-filter' },
      el('option', { value: '' }, 'Any status'),
      BATCH_STATUSES.map((s) => el('option', { value: s, selected: s === status }, s)));
    filter.addEventListener('change', () => { location.hash = hashWith('#/batches', { status: filter.value }); });
    const refresh = el('button', { type: 'button', class: 'secondary', onclick: () => route() }, 'Refresh');

    const batches = data.batches || [];
    let list;
    if (batches.length === 0) {
      list = el('p', { class: 'empty' }, status ? 'No ' + status + ' batches.' : 'No batches yet. ', !status && canAct() ? el('a', { href: '#/import' }, 'Import a file.') : null);
    } else {
      list = el('div', { class: 'scroll' }, el('table', { id: 'batches' },
        el('caption', { class: 'muted caption' }, before ? 'Batches older than #' + before : 'Newest batches first'),
        el('thead', null, el('tr', null,
          el('th', { scope: 'col' }, 'Batch'), el('th', { scope: 'col' }, 'Kind'), el('th', { scope: 'col' }, 'Source'),
          el('th', { scope: 'col' }, 'Status'), el('th', { scope: 'col' }, 'Progress'), el('th', { scope: 'col' }, 'Created'))),
        el('tbody', null, batches.map((b) => el('tr', { 'data-batch': b.id },
          el('td', null, el('a', { href: '#/batches/' + b.id }, '#' + b.id)),
          el('td', null, b.kind),
          el('td', null, b.source_name || ''),
          el('td', { class: 'status-cell' }, statusChips(b.status, b.paused)),
          el('td', null, el('div', { class: 'progress-cell' },
            progressBar(b.done, b.total, 'Batch ' + b.id + ' progress'),
            el('span', { class: 'nowrap count-text' }, fmtInt(b.done) + ' / ' + fmtInt(b.total)))),
          el('td', { class: 'nowrap' }, fmtTime(b.created_at)))))));
    }
    // While some batch on the page moves, refresh its status and progress
    // in place: redrawing the table would lose the keyboard focus.
    const moving = (list) => list.some((b) => b.status === 'running' || b.status === 'ingesting');
    if (moving(batches)) {
      const timer = setInterval(async () => {
        try {
          const fresh = (await api('GET', '/v1/batches?' + params)).batches || [];
          if (!alive()) return;
          for (const b of fresh) {
            const tr = main.querySelector('tr[data-batch="' + Number(b.id) + '"]');
            if (!tr) continue;
            fill(tr.querySelector('.status-cell'), statusChips(b.status, b.paused));
            setProgress(tr.querySelector('.bar'), b.done, b.total);
            tr.querySelector('.count-text').textContent = fmtInt(b.done) + ' / ' + fmtInt(b.total);
          }
          if (!moving(fresh)) clearInterval(timer);
        } catch (_) {
          // A missed refresh is not worth an alert; the next one may work.
        }
      }, 5000);
      cleanups.push(() => clearInterval(timer));
    }
    const pager = el('div', { class: 'pager' },
      before ? el('a', { class: 'button secondary', href: hashWith('#/batches', { status }) }, 'Newest') : null,
      data.next_before !== null && data.next_before !== undefined
        ? el('button', { type: 'button', class: 'secondary', id: 'batches-older', onclick: () => { location.hash = hashWith('#/batches', { status, before: data.next_before }); } }, 'Older')
        : null);
    show(main,
      heading('Batches'),
      el('div', { class: 'inline' },
        el('div', { class: 'field' }, el('label', { for: 'status-filter' }, 'Status'), filter),
        refresh,
        canAct() ? el('a', { class: 'button', href: '#/import' }, 'New import') : null),
      el('div', { class: 'spaced' }, list),
      pager);
  }

  // ---- batch detail ----

  async function viewBatch(main, alive, id) {
    loading(main, 'Batch #' + id);
    const first = await api('GET', '/v1/batches/' + id);
    if (!alive()) return;

    // cur is the latest known state of the batch; render draws it.
    const cur = {
      status: first.status, paused: !!first.paused, counts: first.counts || {}, total: first.total || 0, done: first.done || 0,
      rate: null, eta: null, final: false, source: 'poll',
    };
    const header = first.header || [];

    const statusChip = chip(first.status, 'batch-status');
    const pausedChip = chip('paused', 'batch-paused');
    const bar = progressBar(cur.done, cur.total, 'Batch progress', { id: 'progress', 'data-source': 'poll' });
    bar.classList.add('big');
    const text = el('span', { id: 'progress-text' });
    const pct = el('span', { id: 'progress-percent' });
    const rate = el('span', { id: 'progress-rate' });
    const eta = el('span', { id: 'progress-eta' });
    const link = el('span', { id: 'live-status', class: 'muted' }, 'Connecting…');
    const countsBody = el('tbody');
    const errorCounts = el('div');

    // Actions, for admins only.
    const pauseBtn = el('button', { type: 'button', class: 'secondary', id: 'pause' }, 'Pause');
    const resumeBtn = el('button', { type: 'button', id: 'resume' }, 'Resume');
    const cancelBtn = el('button', { type: 'button', class: 'danger', id: 'cancel' }, 'Cancel batch');
    // A second button instead of confirm(): a dialog would block the page
    // and its live updates.
    const confirmBtn = el('button', { type: 'button', class: 'danger', id: 'confirm-cancel', hidden: true }, 'Confirm cancel');
    const keepBtn = el('button', { type: 'button', class: 'secondary', id: 'keep-running', hidden: true }, 'Keep it');
    const retryBtn = el('button', { type: 'button', class: 'secondary', id: 'retry' }, 'Retry failed');
    const rerunFile = el('input', { type: 'file', id: 'rerun-file', accept: '.csv,.tsv,.txt,.xlsx' });
    const rerunBtn = el('button', { type: 'button', class: 'secondary', id: 'rerun' }, 'Re-run');

    const setBatch = (b) => applyState({ status: b.status, paused: !!b.paused, counts: b.counts || {}, total: b.total || 0, done: b.done || 0 }, 'poll');

    pauseBtn.addEventListener('click', () => guard(pauseBtn, async () => setBatch(await api('POST', '/v1/batches/' + id + '/pause'))));
    resumeBtn.addEventListener('click', () => guard(resumeBtn, async () => setBatch(await api('POST', '/v1/batches/' + id + '/resume'))));
    const askCancel = (on) => {
      cancelBtn.hidden = on;
      confirmBtn.hidden = !on;
      keepBtn.hidden = !on;
      (on ? confirmBtn : cancelBtn).focus();
    };
    cancelBtn.addEventListener('click', () => askCancel(true));
    keepBtn.addEventListener('click', () => askCancel(false));
    confirmBtn.addEventListener('click', () => guard(confirmBtn, async () => {
      const b = await api('POST', '/v1/batches/' + id + '/cancel');
      confirmBtn.hidden = true;
      keepBtn.hidden = true;
      setBatch(b);
      notify('Batch #' + id + ' is cancelled: no new row will start.');
    }));
    retryBtn.addEventListener('click', () => guard(retryBtn, async () => {
      const r = await api('POST', '/v1/batches/' + id + '/retry', { json: { states: ['failed', 'dead'] } });
      if (r.batch) setBatch(r.batch);
      notify('Retrying ' + fmtInt(r.retried) + ' rows.');
    }));
    rerunBtn.addEventListener('click', () => guard(rerunBtn, async () => {
      let opts;
      if (rerunFile.files.length > 0) {
        const form = new FormData();
        form.append('file', rerunFile.files[0]);
        opts = { form };
      }
      const r = await api('POST', '/v1/batches/' + id + '/rerun', opts);
      if (r.batch) setBatch(r.batch);
      rerunFile.value = '';
      notify('Re-run: ' + fmtInt(r.reparsed) + ' rows read again, ' + fmtInt(r.valid) + ' valid, ' + fmtInt(r.invalid) + ' invalid' +
        (r.added ? ', ' + fmtInt(r.added) + ' added' : '') + (r.kept ? ', ' + fmtInt(r.kept) + ' kept' : '') + '.');
    }));

    const dl = (label, elId, path, name) => {
      const b = el('button', { type: 'button', class: 'secondary', id: elId }, label);
      b.addEventListener('click', () => guard(b, () => download(path, name)));
      return b;
    };

    const actions = canAct()
      ? el('div', { class: 'actions', role: 'group', 'aria-label': 'Batch actions' },
        pauseBtn, resumeBtn, cancelBtn, confirmBtn, keepBtn, retryBtn,
        el('span', { class: 'inline' },
          el('span', { class: 'field' }, el('label', { for: 'rerun-file' }, 'Corrected file (optional)'), rerunFile),
          rerunBtn))
      : el('p', { class: 'muted' }, 'You have read-only access (viewer): actions are hidden.');

    function render() {
      statusChip.textContent = cur.status;
      statusChip.className = 'chip chip-' + cssName(cur.status);
      const over = cur.status === 'finished' || cur.status === 'cancelled';
      pausedChip.hidden = !cur.paused || over;
      setProgress(bar, cur.done, cur.total);
      bar.dataset.source = cur.source;
      bar.classList.toggle('stopped', cur.status === 'cancelled');
      text.textContent = fmtInt(cur.done) + ' of ' + fmtInt(cur.total);
      pct.textContent = percent(cur.done, cur.total) + '%';
      const moving = cur.status === 'running' || cur.status === 'ingesting';
      rate.textContent = moving && cur.rate > 0 ? fmtInt(cur.rate) + ' rows/s' : '— rows/s';
      eta.textContent = 'ETA ' + (moving && !cur.paused && cur.eta !== null ? fmtDuration(cur.eta) : '—');

      const counts = cur.counts || {};
      countsBody.replaceChildren(...ROW_STATES.filter((s) => counts[s] > 0).map((s) => el('tr', null,
        el('td', null, chip(s)),
        el('td', { class: 'num' }, el('a', { href: hashWith('#/batches/' + id + '/rows', { state: s }) }, fmtInt(counts[s]))))));
      if (!countsBody.firstChild) countsBody.append(el('tr', null, el('td', { colspan: 2, class: 'muted' }, 'No rows yet.')));

      pauseBtn.hidden = over || cur.paused;
      resumeBtn.hidden = over || !cur.paused;
      if (over) {
        cancelBtn.hidden = true;
        confirmBtn.hidden = true;
        keepBtn.hidden = true;
      } else if (confirmBtn.hidden) {
        cancelBtn.hidden = false;
      }
      retryBtn.disabled = !((counts.failed || 0) + (counts.dead || 0) > 0);
    }

    let pending = null;
    function applyState(s, source) {
      Object.assign(cur, s);
      cur.source = source;
      if (!pending) pending = setTimeout(() => { pending = null; if (alive()) render(); }, RENDER_MS);
    }

    // ---- live feed: the event stream, polling while it is down ----
    let ws = null;
    let cursor = 0;
    let leaving = false;
    let pollTimer = null;
    let retryTimer = null;
    let backoff = 1000;
    let lastPoll = null; // {done, at}: the rate while polling
    let pollFailed = false;

    async function poll() {
      try {
        const b = await api('GET', '/v1/batches/' + id);
        if (leaving) return;
        const now = Date.now();
        let r = null;
        let e = null;
        if (lastPoll && now > lastPoll.at && b.done >= lastPoll.done) {
          r = ((b.done - lastPoll.done) * 1000) / (now - lastPoll.at);
          e = r > 0 ? (b.total - b.done) / r : null;
        }
        lastPoll = { done: b.done, at: now };
        if (pollFailed) {
          // The server is back: the error the last poll showed is stale.
          pollFailed = false;
          $('alert').textContent = '';
        }
        applyState({ status: b.status, paused: !!b.paused, counts: b.counts || {}, total: b.total || 0, done: b.done || 0, rate: r, eta: e }, 'poll');
      } catch (e) {
        if (!leaving) {
          pollFailed = true;
          showError(e);
        }
      }
    }

    function startPolling() {
      if (pollTimer || leaving) return;
      link.textContent = 'Live updates interrupted: polling every ' + POLL_MS / 1000 + ' s';
      lastPoll = null;
      poll();
      pollTimer = setInterval(poll, POLL_MS);
    }

    function stopPolling() {
      clearInterval(pollTimer);
      pollTimer = null;
    }

    function connect() {
      retryTimer = null;
      if (leaving) return;
      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const url = scheme + '//' + location.host + '/v1/batches/' + encodeURIComponent(id) + '/events?cursor=' + cursor;
      let sock;
      try {
        // Browsers cannot set headers on a websocket: the token travels
        // as a subprotocol, next to the protocol the stream speaks.
        sock = new WebSocket(url, ['rowfate.v1', 'bearer.' + session.token]);
      } catch (e) {
        // A token that is not a valid subprotocol name: poll for good.
        startPolling();
        return;
      }
      ws = sock;
      sock.onopen = () => {
        backoff = 1000;
        stopPolling();
        link.textContent = 'Live';
      };
      sock.onmessage = (m) => {
        let msg;
        try { msg = JSON.parse(m.data); } catch (_) { return; }
        if (msg.type === 'event' && msg.event) {
          cursor = msg.cursor || msg.event.seq || cursor;
          const ev = msg.event;
          applyState({
            status: ev.status || cur.status, paused: !!ev.paused, counts: ev.counts || {}, total: ev.total || 0, done: ev.done || 0,
            rate: typeof ev.rows_per_second === 'number' ? ev.rows_per_second : null,
            eta: typeof ev.eta_seconds === 'number' ? ev.eta_seconds : null, final: !!ev.final,
          }, 'ws');
        } else if (msg.type === 'cursor_expired') {
          // Events were trimmed: read the batch afresh, then go on.
          cursor = msg.cursor || cursor;
          poll();
        } else if (msg.type === 'not_found') {
          leaving = true;
          showError(new ApiError(404, 'not_found', 'Batch #' + id + ' no longer exists.'));
        }
      };
      sock.onclose = (e) => {
        if (ws === sock) ws = null;
        if (leaving) return;
        if (e.code === 4004) {
          link.textContent = 'Batch gone';
          showError(new ApiError(404, 'not_found', 'Batch #' + id + ' no longer exists.'));
          return;
        }
        if (e.code === 4003) {
          // The token was revoked while the stream was open: back to the
          // log-in form, as a 401 does.
          leaving = true;
          endSession();
          location.hash = '#/login';
          return;
        }
        // Keep the page current by polling, and come back to the stream
        // from the last cursor received, slower each time it fails.
        startPolling();
        retryTimer = setTimeout(connect, backoff);
        backoff = Math.min(backoff * 2, 30000);
      };
    }

    cleanups.push(() => {
      leaving = true;
      stopPolling();
      clearTimeout(retryTimer);
      clearTimeout(pending);
      if (ws) ws.close(1000, 'page left');
    });

    const sourceText = first.source_name || '';
    show(main,
      el('nav', { 'aria-label': 'Breadcrumb', class: 'muted' }, el('a', { href: '#/batches' }, 'Batches'), ' / #' + id),
      heading('Batch #' + id + ' ', statusChip, ' ', pausedChip),
      el('dl', { class: 'meta' },
        el('dt', null, 'Kind'), el('dd', null, first.kind),
        el('dt', null, 'Source'), el('dd', null, sourceText || '—'),
        el('dt', null, 'Created'), el('dd', null, fmtTime(first.created_at)),
        first.finished_at ? [el('dt', null, 'Finished'), el('dd', null, fmtTime(first.finished_at))] : null,
        first.skipped_empty ? [el('dt', null, 'Empty lines skipped'), el('dd', null, fmtInt(first.skipped_empty))] : null),
      el('h2', null, 'Progress'),
      bar,
      el('div', { class: 'stats' }, el('strong', null, text), el('strong', null, pct), rate, eta, link),
      actions,
      el('div', { class: 'actions', role: 'group', 'aria-label': 'Downloads' },
        dl('Error report (CSV)', 'download-report-csv', '/v1/batches/' + id + '/report?format=csv', 'batch-' + id + '-errors.csv'),
        dl('Error report (XLSX)', 'download-report-xlsx', '/v1/batches/' + id + '/report?format=xlsx', 'batch-' + id + '-errors.xlsx'),
        dl('Original file', 'download-file', '/v1/batches/' + id + '/file', sourceText || 'batch-' + id)),
      el('div', { class: 'detail-grid' },
        el('section', { 'aria-labelledby': 'counts-title' },
          el('h2', { id: 'counts-title' }, 'Rows by state'),
          el('table', { class: 'compact', id: 'counts' },
            el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'State'), el('th', { scope: 'col', class: 'num' }, 'Rows'))),
            countsBody),
          el('p', null, el('a', { href: '#/batches/' + id + '/rows' }, 'Browse all rows'), ' · ',
            el('a', { href: '#/batches/' + id + '/rows?state=invalid' }, 'Invalid rows'))),
        el('section', { 'aria-labelledby': 'errors-title' },
          el('h2', { id: 'errors-title' }, 'Errors by column'),
          errorCounts)),
      (first.warnings || []).length ? [el('h2', null, 'Warnings'), el('ul', null, first.warnings.map((w) => el('li', null, w.message)))] : null,
      historySection(id, header));

    const ec = first.error_counts || [];
    errorCounts.replaceChildren(ec.length === 0 ? el('p', { class: 'muted' }, 'No field errors.') : el('table', { class: 'compact' },
      el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Column'), el('th', { scope: 'col' }, 'Check'), el('th', { scope: 'col', class: 'num' }, 'Rows'))),
      el('tbody', null, ec.map((e) => el('tr', null, el('td', null, e.column || '—'), el('td', null, e.code || ''), el('td', { class: 'num' }, fmtInt(e.count)))))));

    render();
    connect();
  }

  // noNulls is a JSON.stringify replacer that leaves out null members:
  // an absent value is shown as nothing, never as the word null.
  const noNulls = (k, v) => (v === null ? undefined : v);

  // historySection lists the edits, skips and re-runs, read when opened.
  function historySection(id) {
    const body = el('div', null, el('p', { class: 'muted' }, 'Loading…'));
    const d = el('details', { id: 'history' }, el('summary', null, 'History of edits, skips and re-runs'), body);
    let loaded = false;
    d.addEventListener('toggle', async () => {
      if (!d.open || loaded) return;
      loaded = true;
      try {
        const h = (await api('GET', '/v1/batches/' + id + '/history')).history || [];
        body.replaceChildren(h.length === 0 ? el('p', { class: 'muted' }, 'Nothing yet.') : el('table', null,
          el('thead', null, el('tr', null, ['When', 'Row', 'Action', 'By', 'Detail'].map((t) => el('th', { scope: 'col' }, t)))),
          el('tbody', null, h.map((x) => el('tr', null,
            el('td', { class: 'nowrap' }, fmtTime(x.at)), el('td', null, x.row_no ? String(x.row_no) : '—'),
            el('td', null, x.action), el('td', null, x.actor || ''), el('td', null, x.detail ? JSON.stringify(x.detail, noNulls) : ''))))));
      } catch (e) {
        loaded = false;
        body.replaceChildren(el('p', { class: 'muted' }, 'Could not load the history.'));
        showError(e);
      }
    });
    return el('section', { class: 'spaced' }, d);
  }

  // ---- rows ----

  async function viewRows(main, alive, id, q) {
    const state = q.get('state') || '';
    const after = q.get('after') || '';
    loading(main, 'Rows of batch #' + id);
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (state) params.set('state', state);
    if (after) params.set('after', after);
    const [b, page] = await Promise.all([api('GET', '/v1/batches/' + id), api('GET', '/v1/batches/' + id + '/rows?' + params)]);
    if (!alive()) return;
    const header = b.header || [];
    const counts = b.counts || {};

    const tab = (name, count) => el('a', {
      id: 'tab-' + name,
      href: hashWith('#/batches/' + id + '/rows', { state: name === 'all' ? '' : name }),
      'aria-current': (state || 'all') === name ? 'page' : null,
    }, name, ' ', el('span', { class: 'count' }, '(' + fmtInt(count) + ')'));

    const rows = page.rows || [];
    const list = rows.length === 0
      ? el('p', { class: 'empty', id: 'rows-empty' }, after ? 'No more rows.' : state ? 'No ' + state + ' rows.' : 'No rows.')
      : el('ol', { class: 'rows', id: 'rows' }, rows.map((r) => rowItem(id, header, r)));

    show(main,
      el('nav', { 'aria-label': 'Breadcrumb', class: 'muted' }, el('a', { href: '#/batches' }, 'Batches'), ' / ',
        el('a', { href: '#/batches/' + id }, '#' + id), ' / rows'),
      heading('Rows of batch #' + id + ' ', statusChips(b.status, b.paused)),
      el('nav', { class: 'tabs', 'aria-label': 'Row states' }, tab('all', b.total),
        ROW_STATES.filter((s) => ALWAYS_TABS.has(s) || counts[s] > 0 || s === state).map((s) => tab(s, counts[s] || 0))),
      after ? el('p', { class: 'muted' }, 'Rows after row ' + after + '.') : null,
      list,
      el('div', { class: 'pager' },
        after ? el('a', { class: 'button secondary', href: hashWith('#/batches/' + id + '/rows', { state }) }, 'First page') : null,
        page.next_after !== null && page.next_after !== undefined
          ? el('button', { type: 'button', class: 'secondary', id: 'rows-next', onclick: () => { location.hash = hashWith('#/batches/' + id + '/rows', { state, after: page.next_after }); } }, 'Next page')
          : null));
  }

  // rowItem draws one row: number, state, errors inline; its values behind
  // a disclosure; for admins, Edit and Skip with inline forms.
  function rowItem(id, header, r) {
    const li = el('li', { class: 'row-item', 'data-row': r.row_no });
    const values = r.values || [];
    const errors = r.errors || [];

    // A purged row has no values (null, values_purged): say so, never a
    // row of empty cells.
    const details = r.values_purged
      ? el('p', { class: 'muted' }, 'Values purged with the batch\u2019s; outcome and errors kept.')
      : el('details', null, el('summary', null, 'Values'));
    details.addEventListener('toggle', () => {
      if (!details.open || details.querySelector('dl')) return;
      const n = Math.max(header.length, values.length);
      const dl = el('dl', { class: 'meta' });
      for (let i = 0; i < n; i++) {
        dl.append(el('dt', null, header[i] || 'column ' + (i + 1)), el('dd', null, values[i] === undefined || values[i] === '' ? '—' : values[i]));
      }
      details.append(dl);
    }, { once: false });

    const form = el('div', { class: 'row-form', hidden: true });
    const closeForm = (focus) => {
      form.hidden = true;
      form.replaceChildren();
      if (focus) focus.focus();
    };

    const editBtn = el('button', { type: 'button', class: 'secondary small', 'data-action': 'edit' }, 'Edit');
    const skipBtn = el('button', { type: 'button', class: 'secondary small', 'data-action': 'skip' }, 'Skip');
    const replace = (row) => {
      const next = rowItem(id, header, row);
      li.replaceWith(next);
      const h = next.querySelector('.row-no');
      if (h) h.focus();
    };

    editBtn.addEventListener('click', () => {
      const inputs = header.map((col, i) => el('input', { id: 'edit-' + r.row_no + '-' + i, name: col, value: values[i] === undefined ? '' : values[i], autocomplete: 'off' }));
      const save = el('button', { type: 'submit' }, 'Save row ' + r.row_no);
      const f = el('form', null,
        el('div', { class: 'grid' }, header.map((col, i) => el('div', { class: 'field' }, el('label', { for: inputs[i].id }, col), inputs[i]))),
        el('div', { class: 'actions' }, save, el('button', { type: 'button', class: 'secondary', onclick: () => closeForm(editBtn) }, 'Cancel')));
      f.addEventListener('submit', (e) => {
        e.preventDefault();
        const set = {};
        header.forEach((col, i) => {
          const before = values[i] === undefined ? '' : values[i];
          if (inputs[i].value !== before) set[col] = inputs[i].value;
        });
        if (Object.keys(set).length === 0) {
          showError(new Error('Nothing changed in row ' + r.row_no + '.'));
          return;
        }
        guard(save, async () => {
          const row = await api('POST', '/v1/batches/' + id + '/rows/' + r.row_no + '/edit', { json: { set } });
          notify('Row ' + r.row_no + ' saved: it is now ' + row.state + '.');
          replace(row);
        });
      });
      form.replaceChildren(f);
      form.hidden = false;
      if (inputs[0]) inputs[0].focus();
    });

    skipBtn.addEventListener('click', () => {
      const reason = el('input', { id: 'skip-' + r.row_no, name: 'reason', required: true, autocomplete: 'off', placeholder: 'duplicate' });
      const ok = el('button', { type: 'submit', class: 'danger' }, 'Skip row ' + r.row_no);
      const f = el('form', { class: 'inline' },
        el('div', { class: 'field' }, el('label', { for: reason.id }, 'Reason for skipping'), reason),
        ok,
        el('button', { type: 'button', class: 'secondary', onclick: () => closeForm(skipBtn) }, 'Cancel'));
      f.addEventListener('submit', (e) => {
        e.preventDefault();
        guard(ok, async () => {
          const row = await api('POST', '/v1/batches/' + id + '/rows/' + r.row_no + '/skip', { json: { reason: reason.value.trim() } });
          notify('Row ' + r.row_no + ' skipped.');
          replace(row);
        });
      });
      form.replaceChildren(f);
      form.hidden = false;
      reason.focus();
    });

    const acts = canAct() && OPEN_TO_REVIEW.has(r.state) ? el('span', { class: 'row-actions' }, r.values_purged ? null : editBtn, skipBtn) : null;
    // append, not li.append: the DOM would write the nulls of the
    // conditional parts (a row without errors) as the text "null".
    append(li, [
      el('div', { class: 'row-head' },
        el('span', { class: 'row-no', tabindex: '-1' }, 'Row ' + r.row_no),
        chip(r.state),
        r.attempts > 1 ? el('span', { class: 'muted' }, fmtInt(r.attempts) + ' attempts') : null,
        r.reviewed ? el('span', { class: 'muted' }, 'reviewed') : null,
        r.result_id ? el('span', { class: 'muted' }, 'result ' + r.result_id) : null,
        acts),
      errors.length ? el('ul', { class: 'errors' }, errors.map((e) => errorItem(e))) : null,
      details,
      form]);
    return li;
  }

  // errorItem shows "column: message", without repeating the column when
  // the message already starts with it.
  function errorItem(e) {
    const msg = e.message || e.code || 'invalid';
    const col = e.column || '';
    if (!col || msg.startsWith(col + ':')) {
      const i = msg.indexOf(':');
      return i > 0 && col ? el('li', null, el('span', { class: 'col' }, msg.slice(0, i)), msg.slice(i)) : el('li', null, msg);
    }
    return el('li', null, el('span', { class: 'col' }, col), ': ' + msg);
  }

  // ---- import ----

  async function viewImport(main, alive) {
    loading(main, 'Import a file');
    const data = await api('GET', '/v1/kinds');
    if (!alive()) return;
    const kinds = (data.kinds || []).filter((k) => (k.direction || 'import') === 'import');

    const kindSel = el('select', { id: 'import-kind', name: 'kind', required: true },
      kinds.map((k) => el('option', { value: k.name }, k.name)));
    const kindInfo = el('div', { id: 'kind-info' });
    const file = el('input', { type: 'file', id: 'import-file', name: 'file', required: true, accept: '.csv,.tsv,.txt,.xlsx', 'aria-describedby': 'import-file-help' });
    const previewBtn = el('button', { type: 'submit', id: 'import-preview' }, 'Preview');
    const templateBtn = el('button', { type: 'button', class: 'secondary', id: 'download-template' }, 'Download CSV template');
    const result = el('section', { id: 'preview', 'aria-live': 'polite' });

    const kindByName = (n) => kinds.find((k) => k.name === n);
    const describe = () => {
      const k = kindByName(kindSel.value);
      if (!k) {
        kindInfo.replaceChildren();
        return;
      }
      const req = new Set(k.required || []);
      fill(kindInfo,
        k.description ? el('p', null, k.description) : null,
        (k.columns || []).length ? el('p', null, 'Columns: ', (k.columns || []).map((c, i) => [i ? ', ' : '', c, req.has(c) ? el('span', { class: 'required' }, ' (required)') : null])) : null);
    };
    const reset = () => result.replaceChildren();
    kindSel.addEventListener('change', () => { describe(); reset(); });
    file.addEventListener('change', reset);
    templateBtn.addEventListener('click', () => guard(templateBtn, () =>
      download('/v1/kinds/' + encodeURIComponent(kindSel.value) + '/template?format=csv', kindSel.value + '-template.csv')));

    const form = el('form', { id: 'import-form' },
      el('div', { class: 'inline' },
        el('div', { class: 'field' }, el('label', { for: 'import-kind' }, 'Kind'), kindSel),
        templateBtn),
      kindInfo,
      el('div', { class: 'field' },
        el('label', { for: 'import-file' }, 'File'),
        file,
        el('span', { id: 'import-file-help', class: 'muted' }, 'CSV or XLSX, with a header row. Nothing is imported before you confirm.')),
      previewBtn);

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!file.files.length) {
        showError(new Error('Choose a file to preview.'));
        file.focus();
        return;
      }
      const kind = kindSel.value;
      guard(previewBtn, async () => {
        reset();
        const fd = new FormData();
        fd.append('kind', kind);
        fd.append('file', file.files[0]);
        const p = await api('POST', '/v1/batches/preview', { form: fd });
        if (!alive()) return;
        renderPreview(result, kind, kindByName(kind), p);
      });
    });

    if (kinds.length === 0) {
      show(main, heading('Import a file'), el('p', { class: 'empty' }, 'No import kinds are registered.'));
      return;
    }
    show(main,
      heading('Import a file'),
      canAct() ? null : el('p', { class: 'muted' }, 'You have read-only access (viewer): you can preview a file but not import it.'),
      form,
      result);
    describe();
  }

  function renderPreview(out, kind, k, p) {
    const m = p.mapping || {};
    const required = new Set((k && k.required) || []);
    const blocked = !!(p.rejected || m.error);
    const header = p.header || [];
    const counts = p.counts || {};

    const importBtn = el('button', { type: 'button', id: 'import-submit', disabled: blocked || !canAct() }, 'Import ' + (p.source_name || 'file'));
    const key = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2);
    importBtn.addEventListener('click', () => guard(importBtn, async () => {
      // The key makes a second click, or a retry after a lost answer,
      // return the same batch instead of importing twice.
      const b = await api('POST', '/v1/batches', { json: { kind, upload: p.upload, source_name: p.source_name }, headers: { 'Idempotency-Key': key } });
      location.hash = '#/batches/' + b.id;
    }));

    const matched = m.matched || [];
    const unknown = m.unknown || [];
    const missing = m.missing || [];
    fill(out,
      el('h2', { id: 'preview-title' }, 'Preview of ' + (p.source_name || 'the file') + (p.format ? ' (' + p.format + ')' : '')),
      p.rejected ? el('p', { class: 'alert', id: 'preview-rejected' }, 'This file would be refused: ' + p.rejected) : null,
      m.error ? el('p', { class: 'alert' }, 'Header rejected: ' + m.error) : null,
      el('p', { class: 'stats', id: 'preview-counts' },
        el('span', null, el('strong', null, fmtInt(counts.valid)), ' valid rows'),
        el('span', null, el('strong', null, fmtInt(counts.invalid)), ' invalid rows')),
      el('div', { class: 'detail-grid' },
        el('section', { 'aria-labelledby': 'mapping-title' },
          el('h2', { id: 'mapping-title' }, 'Header mapping'),
          el('table', { class: 'compact', id: 'mapping' },
            el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'File header'), el('th', { scope: 'col' }, 'Column'), el('th', { scope: 'col' }, 'Status'))),
            el('tbody', null,
              matched.map((x) => el('tr', null, el('td', null, x.header), el('td', null, x.column), el('td', null, 'matched'))),
              unknown.map((h) => el('tr', null, el('td', null, h), el('td', null, '—'), el('td', null, 'unknown: ignored'))),
              missing.map((x) => el('tr', null, el('td', null, '—'), el('td', null, x.column),
                el('td', null, x.required || required.has(x.column) ? el('span', { class: 'required' }, 'missing (required)') : 'missing')))))),
        el('section', { 'aria-labelledby': 'preview-errors-title' },
          el('h2', { id: 'preview-errors-title' }, 'Errors by column'),
          (p.error_counts || []).length === 0 ? el('p', { class: 'muted' }, 'No field errors.') : el('table', { class: 'compact' },
            el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Column'), el('th', { scope: 'col' }, 'Check'), el('th', { scope: 'col', class: 'num' }, 'Rows'))),
            el('tbody', null, p.error_counts.map((e) => el('tr', null, el('td', null, e.column || '—'), el('td', null, e.code || ''), el('td', { class: 'num' }, fmtInt(e.count)))))))),
      el('h2', null, 'First rows'),
      el('div', { class: 'scroll' }, el('table', { id: 'preview-rows' },
        el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Row'), header.map((h) => el('th', { scope: 'col' }, h)), el('th', { scope: 'col' }, 'Errors'))),
        el('tbody', null, (p.rows || []).map((r) => el('tr', null,
          el('td', { class: 'num' }, String(r.row)),
          header.map((_, i) => el('td', null, (r.values || [])[i] || '')),
          el('td', null, (r.errors || []).length ? el('ul', { class: 'errors' }, r.errors.map(errorItem)) : el('span', { class: 'muted' }, 'ok'))))))),
      el('div', { class: 'actions' }, importBtn,
        blocked ? el('span', { class: 'muted' }, 'Fix the file and preview it again.') : null));
    importBtn.focus();
  }

  // ---- start ----

  $('logout').addEventListener('click', () => {
    endSession();
    location.hash = '#/login';
  });
  window.addEventListener('hashchange', route);
  route();
})();
