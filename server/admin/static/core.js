// Rowfate admin page: what every view uses. Elements built as text (el),
// the API (api, upload), messages, formatting, chips and bars, and the
// session.

export const TOKEN_KEY = 'rowfate.token';
export const PAGE_SIZE = 50; // rows and batches per page: never the whole batch
export const POLL_MS = 2000; // polling period while the event stream is down
export const RENDER_MS = 50; // live updates are drawn at most this often
export const BATCH_STATUSES = ['ingesting', 'running', 'finished', 'cancelled'];
export const ROW_STATES = ['valid', 'invalid', 'processing', 'retrying', 'succeeded', 'failed', 'dead', 'unknown', 'skipped', 'cancelled'];
// Row states that always have a tab; the others get one when they have
// rows, so that the tabs fit on one line.
export const ALWAYS_TABS = new Set(['invalid', 'failed', 'dead', 'unknown', 'succeeded', 'skipped']);
// Rows a person may still edit or skip; the server has the last word.
export const OPEN_TO_REVIEW = new Set(['valid', 'invalid', 'failed', 'dead', 'unknown']);

export const session = { token: sessionStorage.getItem(TOKEN_KEY) || '', me: null };
// cleanups run when the page leaves the current view: they close event
// streams and stop timers.
export const cleanups = [];
// hooks are the router's entry points, set by app.js: route() draws the
// current address again.
export const hooks = { route: () => {} };

export const $ = (id) => document.getElementById(id);

// el builds an element. props: class, text, on<event> handlers, and
// attributes (true for a bare attribute; null, undefined and false are
// left out). Children are nodes or strings (always text), nested arrays
// allowed.
export function el(tag, props, ...children) {
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
export function fill(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

export function append(parent, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// ---- API ----

export class ApiError extends Error {
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
export async function api(method, path, opts) {
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
export async function problem(resp) {
  return problemOf(resp.status, resp.statusText, await resp.text());
}

function problemOf(status, statusText, text) {
  let body = null;
  try {
    body = JSON.parse(text);
  } catch (_) { /* not JSON: a proxy's page, say */ }
  const legacy = body && body.error && typeof body.error === 'object' ? body.error : null;
  const detail = (body && (body.detail || body.title)) || (legacy && legacy.message) ||
    ('The server answered ' + status + ' ' + statusText + '.');
  const code = (body && body.code) || (legacy && legacy.code) || '';
  return new ApiError(status, code, String(detail));
}

// upload POSTs a FormData with XMLHttpRequest, whose upload events report
// how much of a big file has been sent (fetch cannot), and answers the
// JSON. onProgress(sent, total) runs as the bytes go.
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('POST', path);
    x.setRequestHeader('Authorization', 'Bearer ' + session.token);
    x.setRequestHeader('Accept', 'application/json');
    x.upload.addEventListener('progress', (e) => {
      if (onProgress && e.lengthComputable) onProgress(e.loaded, e.total);
    });
    x.addEventListener('error', () => reject(new ApiError(0, 'network', 'The server cannot be reached.')));
    x.addEventListener('abort', () => reject(new ApiError(0, 'aborted', 'The upload was stopped.')));
    x.addEventListener('load', () => {
      if (x.status >= 200 && x.status < 300) {
        try {
          resolve(JSON.parse(x.responseText));
        } catch (e) {
          reject(new ApiError(x.status, 'bad_json', 'The server\u2019s answer is not JSON.'));
        }
        return;
      }
      if (x.status === 401) {
        endSession();
        location.hash = '#/login';
      }
      reject(problemOf(x.status, x.statusText, x.responseText));
    });
    x.send(form);
  });
}

// download fetches a file with the bearer header, which a plain link
// cannot send, and saves it through a blob URL.
export async function download(path, fallbackName) {
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

export function fileName(disposition) {
  if (!disposition) return '';
  let m = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(disposition);
  if (m) {
    try { return decodeURIComponent(m[1].trim()); } catch (_) { /* fall through */ }
  }
  m = /filename\s*=\s*"([^"]*)"/i.exec(disposition) || /filename\s*=\s*([^;]+)/i.exec(disposition);
  return m ? m[1].trim() : '';
}

// ---- messages ----

export function showError(err) {
  const text = err instanceof ApiError ? err.detail : (err && err.message) || String(err);
  $('alert').textContent = text;
  if (!(err instanceof ApiError)) console.error(err);
}

export function notify(text) {
  $('notice').textContent = text;
}

export function clearMessages() {
  $('alert').textContent = '';
  $('notice').textContent = '';
}

// guard runs an action, showing its error, with the button disabled
// meanwhile so that a double click acts once.
export async function guard(button, fn) {
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

export const nf = new Intl.NumberFormat('en-US');
export const fmtInt = (n) => nf.format(Math.round(Number(n) || 0));

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
}

export function fmtDuration(sec) {
  if (!(sec >= 0) || !isFinite(sec)) return '—';
  sec = Math.ceil(sec);
  if (sec < 60) return sec + ' s';
  const m = Math.floor(sec / 60);
  if (m < 60) return m + ' min ' + (sec % 60) + ' s';
  return Math.floor(m / 60) + ' h ' + (m % 60) + ' min';
}

export function percent(done, total) {
  if (!(total > 0)) return 0;
  // Floor, so that 100% means every row is done.
  return Math.min(100, Math.floor((done * 100) / total));
}

export const cssName = (s) => String(s).replace(/[^a-z0-9_-]/gi, '');

export function chip(text, id) {
  return el('span', { class: 'chip chip-' + cssName(text), id }, text);
}

export function statusChips(status, paused) {
  // A finished or cancelled batch may keep its paused flag; it no
  // longer means anything. A paused batch reads as paused first: its
  // status (running) says what it would do once resumed.
  const over = status === 'finished' || status === 'cancelled';
  if (paused && !over) return [chip('paused'), ' ', el('span', { class: 'muted small-text' }, status)];
  return [chip(status)];
}

// BAR_STATES is the order of a state bar's segments: what worked, what
// is still to do, what a person chose, then what needs one. Only
// succeeded is green (app.css).
export const BAR_STATES = ['succeeded', 'valid', 'processing', 'retrying', 'skipped', 'cancelled', 'invalid', 'failed', 'dead', 'unknown'];
// ATTENTION_STATES are the row states a person must look at.
export const ATTENTION_STATES = ['invalid', 'failed', 'dead', 'unknown'];

// countsText says what a batch's rows are, for people and screen readers:
// "13 rows: 9 succeeded, 3 skipped, 1 invalid".
export function countsText(counts, total) {
  counts = counts || {};
  const parts = BAR_STATES.filter((s) => counts[s] > 0).map((s) => fmtInt(counts[s]) + ' ' + s);
  for (const [s, n] of Object.entries(counts)) {
    if (n > 0 && !BAR_STATES.includes(s)) parts.push(fmtInt(n) + ' ' + s);
  }
  return fmtInt(total) + ' rows' + (parts.length ? ': ' + parts.join(', ') : '');
}

// stateBar draws a batch's rows as one bar split by state, each segment
// as wide as its share; setStateBar redraws it. Its text alternative
// lists the counts.
export function stateBar(counts, total, extra) {
  const b = el('div', Object.assign({ class: 'statebar', role: 'img' }, extra || {}));
  setStateBar(b, counts, total);
  return b;
}

export function setStateBar(b, counts, total) {
  counts = counts || {};
  total = Number(total) || 0;
  const sum = Object.values(counts).reduce((a, n) => a + (Number(n) || 0), 0);
  const whole = Math.max(total, sum);
  const text = countsText(counts, total);
  b.setAttribute('aria-label', text);
  b.title = text;
  const segs = [];
  for (const s of BAR_STATES.concat(Object.keys(counts).filter((k) => !BAR_STATES.includes(k)))) {
    const n = Number(counts[s]) || 0;
    if (n <= 0 || whole <= 0) continue;
    const seg = el('span', { class: 'seg seg-' + cssName(s), 'data-state': s, 'data-count': n });
    // CSSOM, not a style attribute: the page's CSP forbids inline styles.
    seg.style.width = ((n * 100) / whole).toFixed(3) + '%';
    segs.push(seg);
  }
  b.replaceChildren(...segs);
}

// progressBar returns a div with role=progressbar; setProgress moves it.
export function progressBar(done, total, label, extra) {
  const b = el('div', Object.assign({ class: 'bar', role: 'progressbar', 'aria-label': label, 'aria-valuemin': 0 }, extra || {}), el('div', { class: 'fill' }));
  setProgress(b, done, total);
  return b;
}

export function setProgress(b, done, total) {
  done = Number(done) || 0;
  total = Number(total) || 0;
  const width = total > 0 ? Math.min(100, (done * 100) / total) : 0;
  b.firstChild.style.width = width.toFixed(2) + '%';
  b.setAttribute('aria-valuemax', String(total));
  b.setAttribute('aria-valuenow', String(Math.min(done, total)));
  b.setAttribute('aria-valuetext', fmtInt(done) + ' of ' + fmtInt(total) + ' rows (' + percent(done, total) + '%)');
  b.classList.toggle('done', total > 0 && done >= total);
}

export function heading(...children) {
  return el('h1', { tabindex: '-1' }, children);
}

export function hashWith(base, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  return base + (s ? '?' + s : '');
}

// ---- session ----

export const canAct = () => !!session.me && session.me.role === 'admin';

export function showSession() {
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

export function endSession() {
  session.token = '';
  session.me = null;
  sessionStorage.removeItem(TOKEN_KEY);
  showSession();
}


// show replaces the view and moves focus to its heading, so that screen
// readers announce the new page and Tab starts from it.
export function show(main, ...children) {
  fill(main, children);
  const h = main.querySelector('h1');
  if (h) h.focus({ preventScroll: true });
}

export function loading(main, title) {
  main.replaceChildren(heading(title), el('p', { class: 'muted' }, 'Loading…'));
}


// errorItem shows "column: message", without repeating the column when
// the message already starts with it.
export function errorItem(e) {
  const msg = e.message || e.code || 'invalid';
  const col = e.column || '';
  if (!col || msg.startsWith(col + ':')) {
    const i = msg.indexOf(':');
    return i > 0 && col ? el('li', null, el('span', { class: 'col' }, msg.slice(0, i)), msg.slice(i)) : el('li', null, msg);
  }
  return el('li', null, el('span', { class: 'col' }, col), ': ' + msg);
}

