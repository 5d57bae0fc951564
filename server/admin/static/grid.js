// Rowfate admin page: the grid that fixes rows. A batch's rows, filtered
// by state, error code and column (GET .../rows?state=&code=&column=,
// paged by keyset), as a spreadsheet: the bad cells marked with their
// message, edited in place with the keyboard, a block pasted from a
// spreadsheet spread from the focused cell, each changed row saved with
// POST .../rows/{row}/edit (validated as the engine does). Below it, the
// bulk actions on every row the filter matches (bulk.js).

import {
  el, api, guard, notify, showError, fmtInt, heading, show, loading, canAct, chip, statusChips, hashWith, stateBar, setStateBar,
  countsText, session, ROW_STATES, OPEN_TO_REVIEW, ATTENTION_STATES, PAGE_SIZE, cleanups,
} from './core.js';
import { bulkPanel } from './bulk.js';

// WORKING are the states of a row a worker has yet to give an outcome.
const WORKING = new Set(['valid', 'processing', 'retrying']);

// PROBLEMS is the grid's default filter: the rows a person must fix.
export const PROBLEMS = ATTENTION_STATES.join(',');

// gridFilter reads the grid's filter from the address: state is a state,
// a comma list of them, or "all"; the rows to fix when absent.
export function gridFilter(q) {
  return { state: q.get('state') || PROBLEMS, code: q.get('code') || '', column: q.get('column') || '', where: q.get('where') || '' };
}

// apiStates is the filter's state as GET rows takes it: "" for all.
export const apiStates = (f) => (f.state === 'all' ? '' : f.state);

export async function viewGrid(main, alive, id, q) {
  const f = gridFilter(q);
  const after = q.get('after') || '';
  loading(main, 'Fix rows of batch #' + id);
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
  for (const [k, v] of Object.entries({ state: apiStates(f), code: f.code, column: f.column, where: f.where })) if (v) params.set(k, v);
  if (after) params.set('after', after);
  // A where the server cannot read is the person's to fix: the grid is
  // drawn empty, with the field, and the server's message says where.
  let whereErr = null;
  const rows = api('GET', '/v1/batches/' + id + '/rows?' + params).catch((err) => {
    if (!f.where || err.status !== 400) throw err;
    whereErr = err;
    return { rows: [], next_after: null };
  });
  const [b, page] = await Promise.all([api('GET', '/v1/batches/' + id), rows]);
  if (!alive()) return;
  const header = b.header || [];
  const here = (change) => hashWith('#/batches/' + id + '/grid', Object.assign({ state: f.state === PROBLEMS ? null : f.state, code: f.code, column: f.column, where: f.where }, change));

  const bar = stateBar(b.counts, b.total, { id: 'grid-statebar' });
  const countsLine = el('p', { id: 'grid-counts', class: 'muted' }, countsText(b.counts, b.total));
  // refreshCounts reads the batch again after a save: its counts are
  // recounted from the rows.
  const refreshCounts = async () => {
    const fresh = await api('GET', '/v1/batches/' + id);
    if (!alive()) return;
    setStateBar(bar, fresh.counts, fresh.total);
    countsLine.textContent = countsText(fresh.counts, fresh.total);
  };

  const grid = makeGrid(id, header, page.rows || [], refreshCounts);
  cleanups.push(liveCounts(id, (ev) => {
    setStateBar(bar, ev.counts, ev.total);
    countsLine.textContent = countsText(ev.counts, ev.total);
  }));
  show(main,
    el('nav', { 'aria-label': 'Breadcrumb', class: 'muted' }, el('a', { href: '#/batches' }, 'Batches'), ' / ',
      el('a', { href: '#/batches/' + id }, '#' + id), ' / fix rows'),
    heading('Fix rows of batch #' + id + ' ', statusChips(b.status, b.paused)),
    bar, countsLine,
    filterForm(b, f, here),
    grid.help,
    grid.node,
    grid.actions,
    el('div', { class: 'pager' },
      after ? el('a', { class: 'button secondary', href: here({}) }, 'First page') : null,
      page.next_after !== null && page.next_after !== undefined
        ? el('button', { type: 'button', class: 'secondary', id: 'grid-next', onclick: () => { location.hash = here({ after: page.next_after }); } }, 'Next page')
        : null),
    canAct() ? bulkPanel(b, f, q.get('rerun') || '') : null);
  cleanups.push(grid.cleanup);
  if (whereErr) showError(whereErr);
}

// liveCounts follows the batch's event stream, as the batch page does,
// and hands each event's counts to onEvent; it returns what closes it.
// Without the stream the counts are still read again after each save.
function liveCounts(id, onEvent) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  let sock;
  try {
    sock = new WebSocket(scheme + '//' + location.host + '/v1/batches/' + encodeURIComponent(id) + '/events?cursor=0', ['rowfate.v1', 'bearer.' + session.token]);
  } catch (_) {
    return () => {};
  }
  sock.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch (_) { return; }
    // Replayed events are older than the counts the view was drawn with.
    if (msg.type === 'event' && !msg.replay && msg.event && msg.event.counts) onEvent(msg.event);
  };
  return () => sock.close(1000, 'page left');
}

// filterForm: state, column and error code; a change goes to the filtered
// address, so that each filter has its own.
function filterForm(b, f, here) {
  const header = b.header || [];
  const codes = [...new Set((b.error_counts || []).map((e) => e.code).filter(Boolean))];
  if (f.code && !codes.includes(f.code)) codes.push(f.code);
  const stateSel = el('select', { id: 'grid-state' },
    el('option', { value: PROBLEMS }, 'Rows to fix (' + ATTENTION_STATES.join(', ') + ')'),
    el('option', { value: 'all' }, 'All states'),
    ROW_STATES.map((s) => el('option', { value: s }, s)));
  stateSel.value = f.state;
  const colSel = el('select', { id: 'grid-column' }, el('option', { value: '' }, 'Any column'), header.map((h) => el('option', { value: h }, h)));
  colSel.value = f.column;
  const codeSel = el('select', { id: 'grid-code' }, el('option', { value: '' }, 'Any error'), codes.map((c) => el('option', { value: c }, c)));
  codeSel.value = f.code;
  // The cells' condition, in batchctl's --where grammar: the cells as
  // the file wrote them, compared as text (country = DE, name in (A, B),
  // amount is null); applied when Enter is pressed or the field is left.
  const whereIn = el('input', { type: 'text', id: 'grid-where', value: f.where, placeholder: 'country = DE', 'aria-describedby': 'grid-where-help' });
  const go = () => { location.hash = here({ state: stateSel.value === PROBLEMS ? null : stateSel.value, column: colSel.value, code: codeSel.value, where: whereIn.value.trim(), after: null }); };
  for (const s of [stateSel, colSel, codeSel, whereIn]) s.addEventListener('change', go);
  return el('div', { class: 'filters', role: 'group', 'aria-label': 'Which rows' },
    el('div', { class: 'field' }, el('label', { for: 'grid-state' }, 'State'), stateSel),
    el('div', { class: 'field' }, el('label', { for: 'grid-column' }, 'Error in column'), colSel),
    el('div', { class: 'field' }, el('label', { for: 'grid-code' }, 'Error code'), codeSel),
    el('div', { class: 'field' }, el('label', { for: 'grid-where' }, 'Cells where'), whereIn,
      el('span', { id: 'grid-where-help', class: 'muted' }, 'as written in the file, e.g. country = DE')));
}

// makeGrid draws the rows as a grid and handles its keyboard: arrows,
// Tab and Shift+Tab move; Enter or F2 edits and Enter commits (moving
// down); typing replaces the cell; Escape cancels; Delete empties;
// Ctrl+V pastes a block (tab-separated, as a spreadsheet copies it).
function makeGrid(id, header, rowsIn, refreshCounts) {
  const data = rowsIn.map((r) => ({ row: r, values: (r.values || []).slice() }));
  const cells = []; // cells[ri][ci]: the value cells
  const trs = [];
  const active = { r: 0, c: 0 };
  let editing = null; // { td, input, ri, ci, before } while a cell is edited
  const changed = () => data.filter((d, ri) => changedCols(ri).length > 0);
  const save = el('button', { type: 'button', id: 'grid-save', disabled: true }, 'Save changes');
  const discard = el('button', { type: 'button', class: 'secondary', id: 'grid-discard', disabled: true }, 'Discard changes');
  const pendingText = el('span', { class: 'muted', id: 'grid-pending', role: 'status' });

  const original = (ri, ci) => ((data[ri].row.values || [])[ci] ?? '');
  const changedCols = (ri) => header.map((_, ci) => ci).filter((ci) => (data[ri].values[ci] ?? '') !== original(ri, ci));
  const editable = (ri) => canAct() && OPEN_TO_REVIEW.has(data[ri].row.state) && !data[ri].row.values_purged;

  const table = el('table', { class: 'fixgrid', id: 'grid', role: 'grid', 'aria-label': 'Rows to fix; Enter edits a cell', 'aria-rowcount': data.length + 1 },
    el('thead', null, el('tr', null, el('th', { scope: 'col' }, 'Row'), el('th', { scope: 'col' }, 'State'),
      header.map((h) => el('th', { scope: 'col' }, h)), el('th', { scope: 'col' }, 'Errors'))),
    el('tbody'));
  const tbody = table.tBodies[0];

  function drawRow(ri) {
    const d = data[ri];
    const r = d.row;
    const errs = r.errors || [];
    const msgs = errs.map((e, i) => el('li', { id: 'err-' + r.row_no + '-' + i }, (e.column ? e.column + ': ' : '') + (e.message || e.code || 'invalid'), e.code ? ' (' + e.code + ')' : ''));
    const rowCells = header.map((h, ci) => {
      const mine = errs.map((e, i) => [e, i]).filter(([e]) => (e.column || '').trim() === h.trim());
      const td = el('td', {
        class: 'cell' + (mine.length ? ' bad' : '') + ((d.values[ci] ?? '') !== original(ri, ci) ? ' changed' : ''),
        role: 'gridcell', tabindex: -1, 'data-col': h, 'data-ci': ci,
        title: mine.length ? mine.map(([e]) => e.message || e.code).join('; ') : null,
        'aria-describedby': mine.length ? mine.map(([, i]) => 'err-' + r.row_no + '-' + i).join(' ') : null,
        'aria-invalid': mine.length ? 'true' : null,
        'aria-readonly': editable(ri) ? null : 'true',
      }, r.values_purged ? '' : (d.values[ci] ?? ''));
      td.addEventListener('focus', () => { active.r = ri; active.c = ci; roving(); });
      td.addEventListener('dblclick', () => { if (!editing) startEdit(false); });
      return td;
    });
    cells[ri] = rowCells;
    const tr = el('tr', { 'data-row': r.row_no, 'aria-rowindex': ri + 2 },
      el('th', { scope: 'row', class: 'num' }, String(r.row_no)),
      el('td', { class: 'state' }, chip(r.state)),
      rowCells,
      el('td', { class: 'msgs' }, msgs.length ? el('ul', { class: 'errors' }, msgs) : el('span', { class: 'muted' }, r.values_purged ? 'values purged' : 'no errors')));
    if (trs[ri]) trs[ri].replaceWith(tr);
    else tbody.append(tr);
    trs[ri] = tr;
  }

  function roving() {
    cells.forEach((row, ri) => row.forEach((td, ci) => { td.tabIndex = ri === active.r && ci === active.c ? 0 : -1; }));
  }

  function focusCell(ri, ci) {
    if (!cells.length) return;
    active.r = Math.max(0, Math.min(cells.length - 1, ri));
    active.c = Math.max(0, Math.min(header.length - 1, ci));
    roving();
    cells[active.r][active.c].focus();
  }

  function setValue(ri, ci, v) {
    data[ri].values[ci] = v;
    const td = cells[ri][ci];
    if (td.textContent !== v) td.textContent = v;
    td.classList.toggle('changed', v !== original(ri, ci));
    updatePending();
  }

  function updatePending() {
    const n = changed().length;
    save.disabled = n === 0;
    discard.disabled = n === 0;
    save.textContent = n ? 'Save ' + fmtInt(n) + (n === 1 ? ' changed row' : ' changed rows') : 'Save changes';
    pendingText.textContent = n ? fmtInt(n) + ' rows changed, not saved yet.' : '';
  }

  // startEdit puts an input in the active cell: with its value selected,
  // or empty when typing starts the edit (the key's character then lands
  // in the input, which has the focus by then).
  function startEdit(empty) {
    const ri = active.r;
    if (!editable(ri)) {
      notify('Row ' + data[ri].row.row_no + ' is ' + data[ri].row.state + ': it cannot be edited.');
      return false;
    }
    const td = cells[ri][active.c];
    const before = data[ri].values[active.c] ?? '';
    const input = el('input', { class: 'cell-input', value: empty ? '' : before, autocomplete: 'off', spellcheck: 'false',
      'aria-label': 'Row ' + data[ri].row.row_no + ', ' + header[active.c] });
    editing = { td, input, ri, ci: active.c, before };
    td.classList.add('editing');
    td.replaceChildren(input);
    input.addEventListener('keydown', (e) => {
      e.stopPropagation();
      if (e.key === 'Enter') { e.preventDefault(); endEdit(true); focusCell(active.r + 1, active.c); }
      else if (e.key === 'Escape') { e.preventDefault(); endEdit(false); focusCell(active.r, active.c); }
      else if (e.key === 'Tab') { e.preventDefault(); endEdit(true); step(e.shiftKey ? -1 : 1); }
    });
    // Clicking elsewhere keeps what was typed, as a spreadsheet does.
    input.addEventListener('blur', () => { if (editing && editing.input === input) endEdit(true); });
    input.addEventListener('paste', (e) => e.stopPropagation());
    input.focus();
    if (!empty) input.select();
    return true;
  }

  function endEdit(keep) {
    const { td, input, ri, ci, before } = editing;
    editing = null;
    td.classList.remove('editing');
    // A cell holds one line.
    const v = keep ? input.value.replace(/\r?\n/g, ' ') : before;
    td.replaceChildren(v);
    setValue(ri, ci, v);
  }

  table.addEventListener('keydown', (e) => {
    if (editing || !e.target.classList || !e.target.classList.contains('cell')) return;
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      e.preventDefault();
      focusCell(active.r + moves[e.key][0], active.c + moves[e.key][1]);
    } else if (e.key === 'Home' || e.key === 'End') {
      e.preventDefault();
      focusCell(e.ctrlKey ? (e.key === 'Home' ? 0 : cells.length - 1) : active.r, e.key === 'Home' ? 0 : header.length - 1);
    } else if (e.key === 'Tab') {
      // Tab walks the cells; past the last one it leaves the grid.
      const last = active.r === cells.length - 1 && active.c === header.length - 1;
      const first = active.r === 0 && active.c === 0;
      if (e.shiftKey ? first : last) return;
      e.preventDefault();
      step(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Enter' || e.key === 'F2') {
      e.preventDefault();
      startEdit(false);
    } else if (e.key === 'Delete' || e.key === 'Backspace') {
      e.preventDefault();
      if (editable(active.r)) setValue(active.r, active.c, '');
    } else if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) {
      // No preventDefault: the character goes to the input.
      if (!startEdit(true)) e.preventDefault();
    }
  });

  function step(dir) {
    let c = active.c + dir;
    let r = active.r;
    if (c >= header.length) { c = 0; r++; }
    if (c < 0) { c = header.length - 1; r--; }
    focusCell(r, c);
  }

  table.addEventListener('paste', (e) => {
    if (editing || !e.target.classList || !e.target.classList.contains('cell')) return;
    const text = (e.clipboardData || window.clipboardData).getData('text/plain');
    if (!text) return;
    e.preventDefault();
    pasteBlock(text);
  });

  // pasteBlock spreads tab-separated lines over the cells from the active
  // one: rows down, columns right, clipped at the grid's edges; rows that
  // cannot be edited keep their values.
  function pasteBlock(text) {
    const lines = text.replace(/\r\n?/g, '\n').replace(/\n$/, '').split('\n').map((l) => l.split('\t'));
    let n = 0;
    let skipped = 0;
    lines.forEach((cols, i) => {
      const ri = active.r + i;
      if (ri >= cells.length) return;
      if (!editable(ri)) { skipped++; return; }
      cols.forEach((v, j) => {
        const ci = active.c + j;
        if (ci >= header.length) return;
        setValue(ri, ci, v);
        n++;
      });
    });
    notify('Pasted ' + fmtInt(n) + (n === 1 ? ' cell' : ' cells') + (skipped ? '; ' + fmtInt(skipped) + ' rows cannot be edited and kept their values' : '') + '. Save to apply.');
  }

  save.addEventListener('click', () => guard(save, async () => {
    const todo = data.map((_, ri) => ri).filter((ri) => changedCols(ri).length > 0);
    const states = {};
    for (const ri of todo) {
      const set = {};
      for (const ci of changedCols(ri)) set[header[ci]] = data[ri].values[ci] ?? '';
      trs[ri].classList.add('saving');
      let row;
      try {
        row = await api('POST', '/v1/batches/' + id + '/rows/' + data[ri].row.row_no + '/edit', { json: { set } });
      } catch (err) {
        trs[ri].classList.remove('saving');
        throw err;
      }
      data[ri] = { row, values: (row.values || []).slice() };
      drawRow(ri);
      states[row.state] = (states[row.state] || 0) + 1;
      if (WORKING.has(row.state)) follow(ri);
    }
    roving();
    updatePending();
    notify('Saved ' + fmtInt(todo.length) + (todo.length === 1 ? ' row' : ' rows') + ': ' + Object.entries(states).map(([s, n]) => fmtInt(n) + ' ' + s).join(', ') + '.');
    await refreshCounts();
    if (cells.length) focusCell(active.r, active.c);
  }));
  // follow reads a row a worker has yet to work (an edit made it valid)
  // until it has an outcome, and redraws it unless the person is
  // changing it.
  const timers = new Set();
  function follow(ri, tries = 0) {
    const t = setTimeout(async () => {
      timers.delete(t);
      let row;
      try {
        row = await api('GET', '/v1/batches/' + id + '/rows/' + data[ri].row.row_no);
      } catch (_) {
        return; // a missed read is not worth an alert; the counts say it
      }
      const busy = changedCols(ri).length > 0 || (editing && editing.ri === ri);
      if (row.state !== data[ri].row.state && !busy) {
        const focused = cells[ri].includes(document.activeElement);
        data[ri] = { row, values: (row.values || []).slice() };
        drawRow(ri);
        roving();
        if (focused) focusCell(active.r, active.c);
        await refreshCounts();
      }
      if (WORKING.has(row.state) && tries < 120) follow(ri, tries + 1);
    }, 500);
    timers.add(t);
  }

  discard.addEventListener('click', () => {
    data.forEach((d, ri) => { d.values = (d.row.values || []).slice(); drawRow(ri); });
    roving();
    updatePending();
  });

  data.forEach((_, ri) => drawRow(ri));
  roving();
  const leave = (e) => {
    if (changed().length === 0) return;
    e.preventDefault();
    e.returnValue = '';
  };
  window.addEventListener('beforeunload', leave);
  const node = data.length === 0
    ? el('p', { class: 'empty', id: 'grid-empty' }, 'No rows match this filter.')
    : el('div', { class: 'grid-wrap' }, table);
  return {
    node,
    help: data.length === 0 ? null : el('p', { class: 'muted', id: 'grid-help' },
      'Arrows or Tab move; Enter or typing edits a cell, Enter keeps it, Escape cancels; Ctrl+V pastes a block copied from a spreadsheet. Changed cells are yellow until saved; a red cell has an error (its message on hover and in the last column).'),
    actions: data.length === 0 || !canAct() ? null : el('div', { class: 'actions' }, save, discard, pendingText),
    cleanup: () => {
      window.removeEventListener('beforeunload', leave);
      for (const t of timers) clearTimeout(t);
    },
  };
}
