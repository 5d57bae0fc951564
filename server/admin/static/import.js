// Rowfate admin page: the import form. Every option batchctl import has
// is a control here; the preview (POST /v1/batches/preview) reads the file
// with them, shows how its header maps onto the kind's columns (a select
// per file column) and each first row's real state, and turns the hints
// of its warnings and errors into buttons that set the controls. The
// import (POST /v1/batches) sends the options the last preview used.

import {
  $, el, fill, api, upload, guard, showError, notify, download, fmtInt, fmtTime, heading, show, loading, canAct, errorItem, chip,
} from './core.js';

// OPTIONS are the import options as controls: name (the API's field),
// label, kind of control, and for selects their choices.
const OPTIONS = [
  { name: 'locale', label: 'Number format (locale)', type: 'select', choices: [['', 'Detect from the file'], ['en', 'en: 1,234.56'], ['de', 'de: 1.234,56'], ['fr', 'fr: 1 234,56'], ['ch', 'ch: 1\u2019234.56']] },
  { name: 'decimal_comma', label: 'Numbers have a decimal comma', type: 'checkbox' },
  { name: 'date_order', label: 'Date order', type: 'select', choices: [['', 'Detect from the file'], ['dmy', 'Day first (dmy)'], ['mdy', 'Month first (mdy)']] },
  { name: 'date_format', label: 'Compact dates (070125)', type: 'text', list: ['ddmmyy', 'yymmdd', 'mmddyy', 'ddmmyyyy', 'yyyymmdd', 'mmddyyyy', 'serial'], placeholder: 'ddmmyy, yyyymmdd, serial, %d%m%Y' },
  { name: 'delimiter', label: 'Delimiter', type: 'select', choices: [['', 'Detect from the file'], [',', 'Comma ,'], [';', 'Semicolon ;'], ['\t', 'Tab'], ['|', 'Pipe |']] },
  { name: 'encoding', label: 'Encoding', type: 'select', choices: [['', 'Detect from the file'], ['utf-8', 'UTF-8'], ['windows-1252', 'Windows-1252'], ['iso-8859-1', 'ISO-8859-1'], ['utf-16le', 'UTF-16 LE'], ['utf-16be', 'UTF-16 BE']] },
  { name: 'sheet', label: 'Sheet (XLSX)', type: 'text', placeholder: 'the first sheet with data' },
  { name: 'header_row', label: 'Header row', type: 'number', placeholder: 'detect' },
  { name: 'strict', label: 'Strict: refuse unknown or missing columns', type: 'checkbox' },
  { name: 'max_invalid', label: 'Refuse the file above invalid rows', type: 'text', placeholder: '10 or 2.5%' },
  { name: 'max_failed', label: 'Pause the batch above failed rows', type: 'text', placeholder: '10 or 5%' },
];

const IGNORE = '\u0000ignore';

// CONVENTIONS are the options saved with a batch (saved_options).
const CONVENTIONS = new Set(['locale', 'decimal_comma', 'date_order', 'date_format']);

// optionControl builds one option's control, id opt-NAME.
function optionControl(o) {
  const id = 'opt-' + o.name;
  if (o.type === 'checkbox') {
    const input = el('input', { type: 'checkbox', id, name: o.name });
    return { o, input, node: el('div', { class: 'field' }, el('label', { class: 'check', for: id }, input, o.label)) };
  }
  let input;
  if (o.type === 'select') {
    input = el('select', { id, name: o.name }, o.choices.map(([v, t]) => el('option', { value: v }, t)));
  } else {
    input = el('input', { id, name: o.name, type: o.type, autocomplete: 'off', placeholder: o.placeholder, min: o.type === 'number' ? 1 : null, list: o.list ? id + '-list' : null });
  }
  return { o, input, node: el('div', { class: 'field' }, el('label', { for: id }, o.label), input, o.list ? el('datalist', { id: id + '-list' }, o.list.map((v) => el('option', { value: v }))) : null) };
}

export async function viewImport(main, alive) {
  loading(main, 'Import a file');
  const data = await api('GET', '/v1/kinds');
  if (!alive()) return;
  const kinds = (data.kinds || []).filter((k) => (k.direction || 'import') === 'import');
  if (kinds.length === 0) {
    show(main, heading('Import a file'), el('p', { class: 'empty' }, 'No import kinds are registered.'));
    return;
  }

  const kindSel = el('select', { id: 'import-kind', name: 'kind', required: true }, kinds.map((k) => el('option', { value: k.name }, k.name)));
  const kindInfo = el('div', { id: 'kind-info' });
  const file = el('input', { type: 'file', id: 'import-file', name: 'file', required: true, accept: '.csv,.tsv,.txt,.xlsx', 'aria-describedby': 'import-file-help' });
  const previewBtn = el('button', { type: 'submit', id: 'import-preview' }, 'Preview');
  const templateBtn = el('button', { type: 'button', class: 'secondary', id: 'download-template' }, 'Download CSV template');
  const bar = el('progress', { id: 'upload-progress', max: 100, value: 0, 'aria-label': 'Upload' });
  const barText = el('span', { id: 'upload-text', class: 'muted' });
  const progress = el('div', { class: 'upload-progress', hidden: true }, bar, barText);
  const result = el('section', { id: 'preview', 'aria-live': 'polite' });
  const controls = OPTIONS.map(optionControl);
  const kindByName = (n) => kinds.find((k) => k.name === n);

  // st is the form's state beyond its controls: the mapping the person
  // chose (file column → kind column, or IGNORE), the one the engine made
  // of the file by itself (auto: only a difference from it is sent), the
  // last preview, and whether a control changed since it.
  const st = { mapping: null, auto: null, preview: null, dirty: false };
  const markDirty = () => {
    st.dirty = true;
    const btn = $('import-submit');
    if (btn) {
      btn.disabled = true;
      $('import-dirty').hidden = false;
    }
  };
  for (const c of controls) c.input.addEventListener('change', markDirty);

  const describe = () => {
    const k = kindByName(kindSel.value);
    const req = new Set((k && k.required) || []);
    fill(kindInfo, !k ? null : [
      k.description ? el('p', null, k.description) : null,
      (k.columns || []).length ? el('p', null, 'Columns: ', k.columns.map((c, i) => [i ? ', ' : '', c, req.has(c) ? el('span', { class: 'required' }, ' (required)') : null])) : null]);
  };
  const reset = () => {
    result.replaceChildren();
    st.mapping = null;
    st.auto = null;
    st.preview = null;
  };
  kindSel.addEventListener('change', () => { describe(); reset(); });
  file.addEventListener('change', reset);
  templateBtn.addEventListener('click', () => guard(templateBtn, () =>
    download('/v1/kinds/' + encodeURIComponent(kindSel.value) + '/template?format=csv', kindSel.value + '-template.csv')));

  const form = el('form', { id: 'import-form' },
    el('div', { class: 'inline' }, el('div', { class: 'field' }, el('label', { for: 'import-kind' }, 'Kind'), kindSel), templateBtn),
    kindInfo,
    el('div', { class: 'field' }, el('label', { for: 'import-file' }, 'File'), file,
      el('span', { id: 'import-file-help', class: 'muted' }, 'CSV or XLSX, with a header row. Nothing is imported before you confirm.')),
    el('fieldset', { id: 'import-options' }, el('legend', null, 'How to read the file'),
      el('p', { class: 'muted' }, 'Leave a control alone to let the file say; the preview tells you when it cannot.'),
      el('div', { class: 'options' }, controls.map((c) => c.node))),
    el('div', { class: 'actions' }, previewBtn),
    progress);

  // options reads the controls and the mapping as the API's options.
  const options = () => {
    const o = {};
    for (const { o: d, input } of controls) {
      if (d.type === 'checkbox') {
        if (input.checked) o[d.name] = true;
      } else if (input.value.trim() !== '' || (d.name === 'delimiter' && input.value === '\t')) {
        o[d.name] = d.type === 'number' ? Number(input.value) : (d.name === 'delimiter' ? input.value : input.value.trim());
      }
    }
    if (st.mapping) {
      for (const [h, col] of Object.entries(st.mapping)) {
        if (col === IGNORE) (o.ignore = o.ignore || []).push(h);
        else if (col && col !== (st.auto || {})[h]) (o.map = o.map || {})[h] = col;
      }
    }
    return o;
  };

  // setOptions puts saved options into the controls and the mapping: the
  // conventions they hold replace the form's (one left out is cleared);
  // how to read the file (delimiter, sheet, ...) stays as it is.
  const setOptions = (o) => {
    for (const { o: d, input } of controls) {
      if (!CONVENTIONS.has(d.name) && !(d.name in o)) continue;
      const v = o[d.name];
      if (d.type === 'checkbox') input.checked = !!v;
      else input.value = v === undefined || v === null ? '' : String(v);
    }
    st.mapping = Object.assign({}, st.mapping || {});
    for (const [h, col] of Object.entries(o.map || {})) st.mapping[h] = col;
    for (const h of o.ignore || []) st.mapping[h] = IGNORE;
  };

  const runPreview = () => {
    if (!file.files.length) {
      showError(new Error('Choose a file to preview.'));
      file.focus();
      return;
    }
    const kind = kindSel.value;
    guard(previewBtn, async () => {
      const fd = new FormData();
      fd.append('kind', kind);
      const o = options();
      for (const [k, v] of Object.entries(o)) {
        if (k === 'map') for (const [h, col] of Object.entries(v)) fd.append('map', h + '=' + col);
        else if (k === 'ignore') for (const h of v) fd.append('ignore', h);
        else fd.append(k, String(v));
      }
      fd.append('file', file.files[0]);
      progress.hidden = false;
      bar.value = 0;
      barText.textContent = 'Sending ' + file.files[0].name + '…';
      let p;
      try {
        p = await upload('/v1/batches/preview', fd, (sent, total) => {
          bar.value = total > 0 ? Math.floor((sent * 100) / total) : 0;
          barText.textContent = sent >= total ? 'Sent; reading the file…' : 'Sending: ' + fmtBytes(sent) + ' of ' + fmtBytes(total) + ' (' + bar.value + '%)';
        });
      } finally {
        progress.hidden = true;
      }
      if (!alive()) return;
      st.preview = p;
      st.dirty = false;
      if (!st.auto && !o.map && !o.ignore) st.auto = Object.fromEntries(((p.mapping || {}).matched || []).map((x) => [x.header, x.column]));
      st.mapping = mappingState(p, st.mapping);
      renderPreview(result, { kind, k: kindByName(kind), p, st, options: o, controls, markDirty, setOptions, runPreview });
    });
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    runPreview();
  });

  show(main,
    heading('Import a file'),
    canAct() ? null : el('p', { class: 'muted' }, 'You have read-only access (viewer): you can preview a file but not import it.'),
    form,
    result);
  describe();
}

function fmtBytes(n) {
  if (n < 1024) return fmtInt(n) + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
  return (n / 1024 / 1024).toFixed(1) + ' MiB';
}

// mappingState is the mapping the selects start from: the preview's
// matches, what the person chose before, and the engine's suggestions
// (near misses), which the table flags.
function mappingState(p, before) {
  const m = p.mapping || {};
  const out = {};
  for (const h of p.header || []) out[h] = '';
  for (const x of m.matched || []) out[x.header] = x.column;
  for (const s of m.suggestions || []) if (!out[s.header]) out[s.header] = s.column;
  for (const [h, col] of Object.entries(before || {})) if (h in out) out[h] = col;
  return out;
}

// HINT_TEXT says what a hint's button does.
const HINT_TEXT = {
  decimal_comma: () => 'Read numbers with a decimal comma',
  locale: (v) => 'Use the number format ' + v,
  date_order: (v) => (v === 'dmy' ? 'Dates are day first (dmy)' : v === 'mdy' ? 'Dates are month first (mdy)' : 'Date order ' + v),
  date_format: (v) => 'Compact dates are ' + v,
  map: (v) => { const [h, c] = v.split('='); return 'Map \u201c' + h + '\u201d onto ' + c; },
  ignore: (v) => 'Ignore the column \u201c' + v + '\u201d',
};

// hintButtons turns a message's hints into buttons that set the import
// form's controls, one per option and value.
function hintButtons(hints, ctx) {
  const out = [];
  for (const h of hints || []) {
    const text = HINT_TEXT[h.option];
    if (!text) continue;
    const values = (h.values || []).length ? h.values : [''];
    for (const v of values) {
      out.push(el('button', {
        type: 'button', class: 'secondary small', 'data-option': h.option, 'data-value': v,
        onclick: () => applyHint(h.option, v, ctx),
      }, text(v)));
    }
  }
  return out;
}

function applyHint(option, value, ctx) {
  let target = null;
  if (option === 'map' || option === 'ignore') {
    const [h, col] = option === 'map' ? value.split('=') : [value, IGNORE];
    ctx.st.mapping[h] = col;
    target = document.querySelector('select[data-header="' + CSS.escape(h) + '"]');
    if (target) target.value = col;
  } else {
    const c = ctx.controls.find((x) => x.o.name === option);
    if (!c) return;
    if (c.o.type === 'checkbox') c.input.checked = true;
    else c.input.value = value;
    target = c.input;
  }
  ctx.markDirty();
  if (target) target.focus();
  notify('Set. Preview again to see the file read that way.');
}

export function renderPreview(out, ctx) {
  const { kind, k, p, st } = ctx;
  const m = p.mapping || {};
  // A required column without a file column refuses the header: the
  // dry run did not run.
  const blocked = !!(p.rejected || m.error || (m.missing || []).some((x) => x.required));
  const counts = p.counts || {};

  const importBtn = el('button', { type: 'button', id: 'import-submit', disabled: blocked || !canAct() }, 'Import ' + (p.source_name || 'file'));
  const key = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2);
  importBtn.addEventListener('click', () => guard(importBtn, async () => {
    // The key makes a second click, or a retry after a lost answer,
    // return the same batch instead of importing twice. The options are
    // the ones this preview read the file with.
    const body = { kind, upload: p.upload, source_name: p.source_name };
    if (Object.keys(ctx.options).length) body.options = ctx.options;
    const b = await api('POST', '/v1/batches', { json: body, headers: { 'Idempotency-Key': key } });
    location.hash = '#/batches/' + b.id;
  }));
  const again = el('button', { type: 'button', class: 'secondary', id: 'preview-again', onclick: () => ctx.runPreview() }, 'Preview again with these choices');

  fill(out,
    el('h2', { id: 'preview-title' }, 'Preview of ' + (p.source_name || 'the file') + (p.format ? ' (' + p.format + ')' : '')),
    fileFacts(p),
    savedOffer(p, ctx),
    p.rejected ? el('p', { class: 'alert', id: 'preview-rejected' }, 'This file would be refused: ' + p.rejected) : null,
    m.error ? el('p', { class: 'alert', id: 'mapping-error' }, 'Header rejected: ' + m.error) : null,
    el('p', { class: 'stats', id: 'preview-counts' },
      el('span', null, el('strong', null, fmtInt(counts.valid)), ' valid rows'),
      el('span', null, el('strong', null, fmtInt(counts.invalid)), ' invalid rows')),
    suggestionsList(p, ctx),
    el('div', { class: 'detail-grid' },
      el('section', { 'aria-labelledby': 'mapping-title' }, el('h2', { id: 'mapping-title' }, 'Header mapping'), mappingTable(p, k, ctx), again),
      el('section', { 'aria-labelledby': 'preview-errors-title' },
        el('h2', { id: 'preview-errors-title' }, 'Errors by column'),
        (p.error_counts || []).length === 0 ? el('p', { class: 'muted' }, blocked ? 'Not checked: the file would be refused.' : 'No field errors.') : el('table', { class: 'compact' },
          el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Column'), el('th', { scope: 'col' }, 'Check'), el('th', { scope: 'col', class: 'num' }, 'Rows'))),
          el('tbody', null, p.error_counts.map((e) => el('tr', null, el('td', null, e.column || '—'), el('td', null, e.code || ''), el('td', { class: 'num' }, fmtInt(e.count)))))))),
    el('h2', null, 'First rows'),
    previewRows(p, blocked),
    el('div', { class: 'actions' }, importBtn,
      el('span', { class: 'muted', id: 'import-dirty', hidden: true }, 'A choice changed since this preview: preview again before importing.'),
      blocked ? el('span', { class: 'muted' }, 'Fix the file or the choices above and preview again.') : null));
  (blocked ? again : importBtn).focus();
}

function fileFacts(p) {
  const facts = [
    p.format ? 'format ' + p.format : '', p.encoding ? 'encoding ' + p.encoding : '',
    p.delimiter ? 'delimiter ' + (p.delimiter === '\t' ? 'tab' : p.delimiter) : '', p.sheet ? 'sheet ' + p.sheet : '',
    p.header_row ? 'header on row ' + p.header_row : '', p.size ? fmtBytes(p.size) : '',
  ].filter(Boolean);
  return facts.length ? el('p', { class: 'muted', id: 'file-facts' }, 'Read as: ' + facts.join(', ') + '.') : null;
}

// savedOffer offers the options of this tenant's last import of a file
// with the same header.
function savedOffer(p, ctx) {
  const s = p.saved_options;
  if (!s || !s.options) return null;
  const use = el('button', { type: 'button', id: 'use-saved', onclick: () => { ctx.setOptions(s.options); ctx.runPreview(); } },
    'Use the mapping and options of batch #' + s.batch_id);
  const o = s.options;
  const parts = Object.entries(o).filter(([, v]) => v !== null && v !== undefined && v !== '' && v !== false).map(([name, v]) =>
    name === 'map' ? 'map ' + Object.entries(v).map(([a, b]) => a + ' \u2192 ' + b).join(', ')
      : name === 'ignore' ? 'ignore ' + v.join(', ') : v === true ? name : name + ' ' + v);
  return el('div', { class: 'saved', id: 'saved-options' },
    el('p', null, 'A file with this header was imported as ', el('a', { href: '#/batches/' + s.batch_id }, 'batch #' + s.batch_id),
      s.created_at ? ' on ' + fmtTime(s.created_at) : '', parts.length ? ', with ' + parts.join('; ') + '.' : '.'),
    use);
}

// suggestionsList shows the warnings, and the options the errors' hints
// name, each as buttons that set the control.
function suggestionsList(p, ctx) {
  const items = (p.warnings || []).map((w) => el('li', null, w.message || '', ' ', hintButtons(w.hints, ctx)));
  const seen = new Map();
  for (const e of p.errors || []) {
    for (const h of e.hints || []) {
      const key = h.option + ':' + (h.values || []).join('|');
      if (!seen.has(key)) seen.set(key, { hint: h, n: 0, example: e });
      seen.get(key).n++;
    }
  }
  const byOption = [...seen.values()].filter((x) => !(p.warnings || []).some((w) => (w.hints || []).some((h) => h.option === x.hint.option)));
  for (const x of byOption) {
    items.push(el('li', null, (x.example.column ? x.example.column + ': ' : '') + (x.example.message || x.example.code || ''),
      x.n > 1 ? ' (and ' + fmtInt(x.n - 1) + ' more in the first errors)' : '', ' ', hintButtons([x.hint], ctx)));
  }
  if (items.length === 0) return null;
  return el('section', { 'aria-labelledby': 'warnings-title' }, el('h2', { id: 'warnings-title' }, 'What the file needs'), el('ul', { class: 'warnings', id: 'warnings' }, items));
}

// mappingTable: a select per file column, the kind's columns or
// "ignore", prefilled from the preview; near misses flagged.
function mappingTable(p, k, ctx) {
  const m = p.mapping || {};
  const cols = (k && k.columns) || [];
  const required = new Set((k && k.required) || []);
  const matched = new Map((m.matched || []).map((x) => [x.header, x.column]));
  const suggested = new Map((m.suggestions || []).map((s) => [s.header, s.column]));
  const rows = (p.header || []).map((h, i) => {
    const id = 'map-' + i;
    const cur = ctx.st.mapping[h] || '';
    const sel = el('select', { id, 'data-header': h },
      // A column the engine matched by itself is read unless ignored.
      matched.has(h) && matched.get(h) === (ctx.st.auto || {})[h] ? null : el('option', { value: '' }, '(not read)'),
      cols.map((c) => el('option', { value: c }, c + (required.has(c) ? ' (required)' : ''))),
      el('option', { value: IGNORE }, 'ignore this column'));
    sel.value = cur;
    if (sel.value !== cur) sel.value = '';
    sel.addEventListener('change', () => {
      ctx.st.mapping[h] = sel.value;
      ctx.markDirty();
    });
    let status;
    if (suggested.has(h) && !matched.has(h)) status = el('span', { class: 'flag' }, 'near miss: looks like ' + suggested.get(h) + ', check it');
    else if (matched.has(h)) status = el('span', null, 'matched ' + matched.get(h));
    else if (cur === IGNORE) status = el('span', { class: 'muted' }, 'ignored');
    else status = el('span', { class: 'muted' }, 'unknown: not read');
    return el('tr', { 'data-header': h }, el('th', { scope: 'row' }, el('label', { for: id }, h)), el('td', null, sel), el('td', null, status));
  });
  const missing = (m.missing || []).map((x) => el('tr', null, el('th', { scope: 'row' }, '—'), el('td', null, x.column),
    el('td', null, x.required || required.has(x.column) ? el('span', { class: 'required' }, 'missing (required)') : 'missing')));
  return el('table', { class: 'compact mapping', id: 'mapping' },
    el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'File column'), el('th', { scope: 'col' }, 'Kind column'), el('th', { scope: 'col' }, 'Status'))),
    el('tbody', null, rows, missing));
}

// previewRows shows the first rows with their real state: the dry run's
// row_outcomes has the dry run's state and every error of each of the
// file's first rows, matched here by row number.
function previewRows(p, blocked) {
  const header = p.header || [];
  const outcomes = new Map((p.row_outcomes || []).map((o) => [o.row, o]));
  return el('div', { class: 'scroll' }, el('table', { id: 'preview-rows' },
    el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Row'), el('th', { scope: 'col' }, 'State'), header.map((h) => el('th', { scope: 'col' }, h)), el('th', { scope: 'col' }, 'Errors'))),
    el('tbody', null, (p.rows || []).map((r) => {
      const o = outcomes.get(r.row);
      // A reading error (a ragged row) is the record's own; the dry run
      // has it too, once.
      const mine = o ? (o.errors || []) : (r.errors || []);
      let state;
      if (blocked || !o) state = 'not checked';
      else state = o.state;
      const bad = new Set(mine.map((e) => e.column));
      return el('tr', { 'data-row': r.row, class: 'state-' + state.replace(' ', '-') },
        el('td', { class: 'num' }, String(r.row)),
        el('td', { class: 'state' }, state === 'not checked' ? el('span', { class: 'muted' }, state) : chip(state)),
        header.map((h, i) => el('td', { class: bad.has(h) ? 'bad' : null }, (r.values || [])[i] || '')),
        el('td', null, mine.length ? el('ul', { class: 'errors' }, mine.map(errorItem)) : el('span', { class: 'muted' }, state === 'valid' ? 'no errors' : '')));
    }))));
}
