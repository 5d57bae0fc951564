// Rowfate admin page: plain JavaScript modules, no framework, no build
// step, nothing loaded from elsewhere. It speaks the HTTP API v1 with the
// bearer token the person pasted, kept in sessionStorage so that it dies
// with the tab.
//
// Everything the API returns is put on the page as text (el() builds nodes
// and sets textContent), never as HTML: file contents are untrusted.
//
// app.js routes and draws the batch list, a batch and its rows; core.js
// holds what every view uses, import.js the import form and its preview,
// grid.js the grid that fixes rows, bulk.js the bulk actions.

import {
  TOKEN_KEY, PAGE_SIZE, POLL_MS, RENDER_MS, BATCH_STATUSES, ROW_STATES, ALWAYS_TABS, OPEN_TO_REVIEW, session, cleanups, hooks, $,
  el, append, ApiError, api, upload, download, showError, notify, clearMessages, guard, fmtInt, fmtTime, fmtDuration, percent, cssName,
  chip, statusChips, BAR_STATES, ATTENTION_STATES, stateBar, setStateBar, progressBar, setProgress, heading, hashWith, canAct,
  showSession, endSession, show, loading, errorItem,
} from './core.js';
import { viewImport } from './import.js';
import { viewGrid } from './grid.js';

// view counts navigations, so that a view whose data arrives after the
// person has moved on draws nothing.
let view = 0;
hooks.route = () => route();

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
    } else if (parts[0] === 'batches' && parts.length === 3 && /^\d+$/.test(parts[1]) && parts[2] === 'grid') {
      await viewGrid(main, alive, parts[1], q);
    } else if (parts[0] === 'import' && parts.length === 1) {
      await viewImport(main, alive);
    } else {
      main.replaceChildren(heading('Not found'), el('p', null, 'There is no such page. ', el('a', { href: '#/batches' }, 'See the batches.')));
    }
  } catch (e) {
    if (alive()) showError(e);
  }
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

// batchFilters reads the list's filters from the address: status, kind
// and attention (only the batches that need a person).
function batchFilters(q) {
  return { status: q.get('status') || '', kind: q.get('kind') || '', attention: q.get('attention') === '1' ? '1' : '' };
}

async function viewBatches(main, alive, q) {
  const f = batchFilters(q);
  const before = q.get('before') || '';
  loading(main, 'Batches');
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (f.status) params.set('status', f.status);
  if (f.kind) params.set('kind', f.kind);
  if (f.attention) params.set('attention', 'true');
  if (before) params.set('before', before);
  const [data, kinds] = await Promise.all([api('GET', '/v1/batches?' + params), api('GET', '/v1/kinds').catch(() => ({ kinds: [] }))]);
  if (!alive()) return;

  const go = (change) => { location.hash = hashWith('#/batches', Object.assign({}, f, change)); };
  const filter = el('select', { id: 'status-filter' },
    el('option', { value: '' }, 'Any status'),
    BATCH_STATUSES.map((s) => el('option', { value: s, selected: s === f.status }, s)));
  filter.addEventListener('change', () => go({ status: filter.value }));
  const kindNames = (kinds.kinds || []).map((k) => k.name);
  if (f.kind && !kindNames.includes(f.kind)) kindNames.push(f.kind);
  const kindFilter = el('select', { id: 'kind-filter' },
    el('option', { value: '' }, 'Any kind'),
    kindNames.map((k) => el('option', { value: k, selected: k === f.kind }, k)));
  kindFilter.addEventListener('change', () => go({ kind: kindFilter.value }));
  const attention = el('input', { type: 'checkbox', id: 'attention-filter', checked: !!f.attention });
  attention.addEventListener('change', () => go({ attention: attention.checked ? '1' : '' }));
  const refresh = el('button', { type: 'button', class: 'secondary', onclick: () => hooks.route() }, 'Refresh');

  // The server filters by kind and attention; the page checks again, so
  // that a server without those filters still shows the right list.
  const batches = (data.batches || []).filter((b) => (!f.kind || b.kind === f.kind) && (!f.attention || needsAttention(b)));
  let list;
  if (batches.length === 0) {
    const what = [f.attention ? 'needing attention' : '', f.status, f.kind].filter(Boolean).join(', ');
    list = el('p', { class: 'empty', id: 'batches-empty' }, what ? 'No batches (' + what + ').' : 'No batches yet. ', !what && canAct() ? el('a', { href: '#/import' }, 'Import a file.') : null);
  } else {
    list = el('div', { class: 'scroll' }, el('table', { id: 'batches' },
      el('caption', { class: 'muted caption' }, before ? 'Batches older than #' + before : 'Newest batches first'),
      el('thead', null, el('tr', null,
        el('th', { scope: 'col' }, 'Batch'), el('th', { scope: 'col' }, 'Kind'), el('th', { scope: 'col' }, 'Source'),
        el('th', { scope: 'col' }, 'Status'), el('th', { scope: 'col' }, 'Rows by state'), el('th', { scope: 'col' }, 'Needs attention'),
        el('th', { scope: 'col' }, 'Created'))),
      el('tbody', null, batches.map(batchRow))));
  }
  // While some batch on the page moves, refresh its status and counts in
  // place: redrawing the table would lose the keyboard focus.
  const moving = (list) => list.some((b) => b.status === 'running' || b.status === 'ingesting');
  if (moving(batches)) {
    const timer = setInterval(async () => {
      try {
        const fresh = (await api('GET', '/v1/batches?' + params)).batches || [];
        if (!alive()) return;
        for (const b of fresh) {
          const tr = main.querySelector('tr[data-batch="' + Number(b.id) + '"]');
          if (tr) tr.replaceWith(batchRow(b));
        }
        if (!moving(fresh)) clearInterval(timer);
      } catch (_) {
        // A missed refresh is not worth an alert; the next one may work.
      }
    }, 5000);
    cleanups.push(() => clearInterval(timer));
  }
  const pager = el('div', { class: 'pager' },
    before ? el('a', { class: 'button secondary', href: hashWith('#/batches', f) }, 'Newest') : null,
    data.next_before !== null && data.next_before !== undefined
      ? el('button', { type: 'button', class: 'secondary', id: 'batches-older', onclick: () => go({ before: data.next_before }) }, 'Older')
      : null);
  show(main,
    heading('Batches'),
    el('div', { class: 'filters', role: 'group', 'aria-label': 'Filters' },
      el('div', { class: 'field' }, el('label', { for: 'status-filter' }, 'Status'), filter),
      el('div', { class: 'field' }, el('label', { for: 'kind-filter' }, 'Kind'), kindFilter),
      el('div', { class: 'field' }, el('label', { class: 'check', for: 'attention-filter' }, attention, 'Needs attention only')),
      refresh,
      canAct() ? el('a', { class: 'button', href: '#/import' }, 'New import') : null),
    el('div', { class: 'spaced' }, list),
    legend(),
    pager);
}

// needsAttention: rows a person must look at, or a batch paused.
function needsAttention(b) {
  const c = b.counts || {};
  const over = b.status === 'finished' || b.status === 'cancelled';
  return ATTENTION_STATES.some((s) => c[s] > 0) || (!!b.paused && !over);
}

// batchRow is one batch of the list: its state bar, and the counts that
// need a person, each a link to those rows in the grid.
function batchRow(b) {
  const c = b.counts || {};
  const needs = ATTENTION_STATES.filter((s) => c[s] > 0).map((s) => el('a', {
    class: 'chip chip-' + s, href: hashWith('#/batches/' + b.id + '/grid', { state: s }), 'data-count': s,
  }, fmtInt(c[s]) + ' ' + s));
  return el('tr', { 'data-batch': b.id, class: needsAttention(b) ? 'attention' : null },
    el('td', null, el('a', { href: '#/batches/' + b.id }, '#' + b.id)),
    el('td', null, b.kind),
    el('td', null, b.source_name || ''),
    el('td', { class: 'status-cell' }, statusChips(b.status, b.paused)),
    el('td', null, el('div', { class: 'progress-cell' },
      stateBar(c, b.total, { 'data-batch': b.id }),
      el('span', { class: 'nowrap count-text' }, fmtInt(b.done) + ' / ' + fmtInt(b.total)))),
    el('td', null, needs.length ? el('span', { class: 'needs' }, needs) : el('span', { class: 'muted' }, b.paused ? 'paused' : '—')),
    el('td', { class: 'nowrap' }, fmtTime(b.created_at)));
}

// legend names the state bar's colours.
function legend() {
  return el('ul', { class: 'legend', 'aria-label': 'Colours of the state bars' },
    BAR_STATES.map((s) => el('li', null, el('span', { class: 'swatch seg-' + s, 'aria-hidden': 'true' }), s)));
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
  const states = stateBar(cur.counts, cur.total, { id: 'batch-statebar', class: 'statebar big' });
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
    const r = opts
      ? await upload('/v1/batches/' + id + '/rerun', opts.form, (sent, total) => notify('Sending the corrected file: ' + percent(sent, total) + '%'))
      : await api('POST', '/v1/batches/' + id + '/rerun');
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
    setStateBar(states, cur.counts, cur.total);
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
    states,
    legend(),
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
        el('p', null, el('a', { href: '#/batches/' + id + '/grid', id: 'fix-rows' }, 'Fix rows in a grid'), ' · ',
          el('a', { href: '#/batches/' + id + '/rows' }, 'Browse all rows'), ' · ',
          el('a', { href: '#/batches/' + id + '/rows?state=invalid' }, 'Invalid rows'))),
      el('section', { 'aria-labelledby': 'errors-title' },
        el('h2', { id: 'errors-title' }, 'Errors by column'),
        errorCounts)),
    (first.warnings || []).length ? [el('h2', null, 'Warnings'), el('ul', { id: 'batch-warnings' }, first.warnings.map((w) => el('li', null, w.message || '', ' ', rerunHints(id, w.hints))))] : null,
    historySection(id, header));

  const ec = first.error_counts || [];
  errorCounts.replaceChildren(ec.length === 0 ? el('p', { class: 'muted' }, 'No field errors.') : el('table', { class: 'compact' },
    el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Column'), el('th', { scope: 'col' }, 'Check'), el('th', { scope: 'col', class: 'num' }, 'Rows'))),
    el('tbody', null, ec.map((e) => el('tr', null, el('td', null, e.column || '—'), el('td', null, e.code || ''), el('td', { class: 'num' }, fmtInt(e.count)))))));

  render();
  connect();
}

// RERUN_HINTS are the hints a re-run with new conventions settles, and
// what their links say.
const RERUN_HINTS = {
  decimal_comma: () => 'Re-run with a decimal comma',
  locale: (v) => 'Re-run with the number format ' + v,
  date_order: (v) => 'Re-run with the date order ' + v,
  date_format: (v) => 'Re-run with compact dates ' + v,
};

// rerunHints turns a batch warning's hints into links to the grid's
// re-run form, that option set and focused.
function rerunHints(id, hints) {
  if (!canAct()) return null;
  const out = [];
  for (const h of hints || []) {
    const text = RERUN_HINTS[h.option];
    if (!text) continue;
    for (const v of (h.values || []).length ? h.values : ['']) {
      out.push(el('a', { class: 'button secondary small', 'data-option': h.option, 'data-value': v,
        href: hashWith('#/batches/' + id + '/grid', { state: 'all', rerun: h.option + (v ? ':' + v : '') }) }, text(v)));
    }
  }
  return out.length ? el('span', { class: 'inline-actions' }, out) : null;
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
    el('p', null, el('a', { href: hashWith('#/batches/' + id + '/grid', { state: state || 'all' }), id: 'open-grid' }, 'Fix these rows in a grid')),
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

// ---- start ----

$('logout').addEventListener('click', () => {
  endSession();
  location.hash = '#/login';
});
window.addEventListener('hashchange', route);
route();
