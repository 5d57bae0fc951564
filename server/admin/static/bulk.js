// Rowfate admin page: bulk actions on every row the grid's filter matches,
// not a page of them (POST /v1/batches/{id}/rows/bulk): skip with a
// reason, retry, set a column's value, find and replace in a column; and
// a re-run of the batch with new conventions (POST .../rerun). Each is
// previewed first ("This will skip 1,204 rows."), then confirmed.

import { el, api, guard, notify, fmtInt, hooks } from './core.js';

const ACTIONS = [
  ['skip', 'Skip them (with a reason)'],
  ['retry', 'Retry them (failed, dead)'],
  ['set', 'Set a column to a value'],
  ['replace', 'Find and replace in a column'],
  ['rerun', 'Re-run the batch with new conventions'],
];

const VERB = { skip: 'skip', retry: 'retry', set: 'change', replace: 'change', rerun: 're-read' };
const DONE = { skip: 'Skipped', retry: 'Retrying', set: 'Changed', replace: 'Changed' };

// bulkFilter is the grid's filter as the bulk endpoint takes it; an empty
// one must say "all" (the server refuses it otherwise).
export function bulkFilter(f) {
  const filter = {};
  const states = (f.state === 'all' ? '' : f.state || '').split(',').map((s) => s.trim()).filter(Boolean);
  if (states.length) filter.states = states;
  if (f.code) filter.code = f.code;
  if (f.column) filter.column = f.column;
  if (f.where) filter.where = f.where;
  return filter;
}

function describeFilter(filter) {
  const parts = [];
  if (filter.states) parts.push('state ' + filter.states.join(' or '));
  if (filter.code) parts.push('error code ' + filter.code);
  if (filter.column) parts.push('an error in ' + filter.column);
  if (filter.where) parts.push('cells where ' + filter.where);
  return parts.length ? 'rows with ' + parts.join(', ') : 'every row of the batch';
}

function field(id, label, input) {
  input.id = id;
  return el('div', { class: 'field', 'data-for': id }, el('label', { for: id }, label), input);
}

// bulkPanel is the bulk form. preset ("decimal_comma", "date_order:dmy")
// opens it on the re-run with that convention set and focused: a batch
// warning's hint links here.
export function bulkPanel(b, f, preset) {
  const header = b.header || [];
  const filter = bulkFilter(f);
  const action = el('select', {}, ACTIONS.map(([v, t]) => el('option', { value: v }, t)));
  const reason = el('input', { autocomplete: 'off', placeholder: 'signed up before the shop opened' });
  const column = el('select', {}, header.map((h) => el('option', { value: h }, h)));
  const value = el('input', { autocomplete: 'off' });
  const find = el('input', { autocomplete: 'off' });
  const repl = el('input', { autocomplete: 'off' });
  const locale = el('select', {}, [['', 'as imported'], ['en', 'en'], ['de', 'de'], ['fr', 'fr'], ['ch', 'ch']].map(([v, t]) => el('option', { value: v }, t)));
  const decimalComma = el('input', { type: 'checkbox', id: 'bulk-decimal-comma' });
  const dateOrder = el('select', {}, [['', 'as imported'], ['dmy', 'Day first (dmy)'], ['mdy', 'Month first (mdy)']].map(([v, t]) => el('option', { value: v }, t)));
  const dateFormat = el('input', { autocomplete: 'off', placeholder: 'ddmmyy, yyyymmdd, serial' });
  const previewBtn = el('button', { type: 'submit', id: 'bulk-preview' }, 'Preview');
  const confirmBox = el('div', { class: 'confirm', id: 'bulk-confirm-box', hidden: true, role: 'alert' });

  const groups = {
    skip: [field('bulk-reason', 'Reason', reason)],
    set: [field('bulk-column', 'Column', column), field('bulk-value', 'New value', value)],
    replace: [field('bulk-find', 'Find', find), field('bulk-replace', 'Replace with', repl)],
    rerun: [field('bulk-locale', 'Number format (locale)', locale),
      el('div', { class: 'field' }, el('label', { class: 'check', for: 'bulk-decimal-comma' }, decimalComma, 'Numbers have a decimal comma')),
      field('bulk-date-order', 'Date order', dateOrder), field('bulk-date-format', 'Compact dates', dateFormat)],
  };
  action.id = 'bulk-action';
  // The column select serves set and replace.
  const columnField = groups.set[0];
  const fields = el('div', { class: 'inline' });
  const showFields = () => {
    confirmBox.hidden = true;
    const a = action.value;
    const list = a === 'replace' ? [columnField].concat(groups.replace) : (groups[a] || []);
    fields.replaceChildren(...list);
  };
  action.addEventListener('change', showFields);

  // request is what the chosen action sends, or an Error saying what is
  // missing.
  const request = () => {
    const a = action.value;
    if (a === 'rerun') {
      const options = {};
      if (locale.value) options.locale = locale.value;
      if (decimalComma.checked) options.decimal_comma = true;
      if (dateOrder.value) options.date_order = dateOrder.value;
      if (dateFormat.value.trim()) options.date_format = dateFormat.value.trim();
      if (Object.keys(options).length === 0) return new Error('Choose at least one convention to re-run the batch with.');
      return { rerun: true, options };
    }
    const body = { action: a, filter };
    if (Object.keys(filter).length === 0) body.all = true;
    if (a === 'skip') {
      if (!reason.value.trim()) return new Error('Say why these rows are skipped.');
      body.reason = reason.value.trim();
    } else if (a === 'set') {
      body.column = column.value;
      body.value = value.value;
    } else if (a === 'replace') {
      if (!find.value) return new Error('Say what to find.');
      Object.assign(body, { column: column.value, find: find.value, replace: repl.value });
    }
    return body;
  };

  const form = el('form', { class: 'bulk', id: 'bulk', 'aria-labelledby': 'bulk-title' },
    el('h2', { id: 'bulk-title' }, 'Act on every matching row'),
    el('p', { class: 'muted', id: 'bulk-scope' }, 'Applies on the server to all ' + describeFilter(filter) + ', not only this page.'),
    el('div', { class: 'inline' }, field('bulk-action', 'Action', action), fields, previewBtn),
    confirmBox);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const req = request();
    if (req instanceof Error) {
      guard(null, () => { throw req; });
      return;
    }
    guard(previewBtn, async () => {
      let n;
      if (req.rerun) {
        // A re-run keeps completed and reviewed rows: at most the rest is
        // read again (the reviewed ones are not counted apart).
        const c = b.counts || {};
        n = Math.max(0, (b.total || 0) - (c.succeeded || 0) - (c.skipped || 0));
      } else {
        const p = await api('POST', '/v1/batches/' + b.id + '/rows/bulk', { json: Object.assign({}, req, { preview: true }) });
        n = p.matched;
      }
      askConfirm(req, n);
    });
  });

  function askConfirm(req, n) {
    const a = req.rerun ? 'rerun' : req.action;
    const what = 'This will ' + VERB[a] + ' ' + (req.rerun ? 'up to ' : '') + fmtInt(n) + (n === 1 ? ' row' : ' rows') +
      (req.rerun ? ' of the batch with ' + Object.entries(req.options).map(([k, v]) => (v === true ? k : k + ' ' + v)).join(', ') : ' (' + describeFilter(filter) + ')') + '.';
    const ok = el('button', { type: 'button', class: 'danger', id: 'bulk-confirm', disabled: n === 0 }, n === 0 ? 'Nothing to do' : 'Confirm');
    const cancel = el('button', { type: 'button', class: 'secondary', id: 'bulk-cancel' }, 'Cancel');
    cancel.addEventListener('click', () => { confirmBox.hidden = true; previewBtn.focus(); });
    ok.addEventListener('click', () => guard(ok, async () => {
      let msg;
      if (req.rerun) {
        const r = await api('POST', '/v1/batches/' + b.id + '/rerun', { json: { options: req.options } });
        msg = 'Re-run: ' + fmtInt(r.reparsed) + ' rows read again, ' + fmtInt(r.valid) + ' valid, ' + fmtInt(r.invalid) + ' invalid.';
      } else {
        const r = await api('POST', '/v1/batches/' + b.id + '/rows/bulk', { json: Object.assign({}, req, { preview: false }) });
        msg = DONE[req.action] + ' ' + fmtInt(r.changed) + (r.changed === 1 ? ' row' : ' rows') +
          (req.action === 'set' || req.action === 'replace' ? ': ' + fmtInt(r.valid) + ' valid, ' + fmtInt(r.invalid) + ' invalid' : '') + '.';
      }
      // The grid and the counts are read again; the message outlives
      // the redraw.
      await hooks.route();
      notify(msg);
    }));
    confirmBox.replaceChildren(el('p', { id: 'bulk-summary' }, what), el('div', { class: 'actions' }, ok, cancel));
    confirmBox.hidden = false;
    ok.focus();
  }

  showFields();
  if (preset) {
    const [opt, v] = preset.split(':');
    const target = { decimal_comma: decimalComma, locale, date_order: dateOrder, date_format: dateFormat }[opt];
    if (target) {
      action.value = 'rerun';
      showFields();
      if (target === decimalComma) decimalComma.checked = true;
      else target.value = v || '';
      // Once the view is drawn, which focuses its heading.
      setTimeout(() => target.focus(), 0);
    }
  }
  return form;
}
