// ui.js: tiny DOM helpers. Every piece of data goes in as text
// (textContent, attribute values): nothing here, nor in a page, parses
// strings as HTML, so a key alias or an error message never becomes markup.

import { APIError } from './api.js';

export { fieldError } from './form.js';

// el builds an element: el('button', {class: 'x', onclick: fn}, 'text', child).
// Attributes starting with "on" are listeners; false/null/undefined
// attributes are left out; true sets an empty attribute; children are
// strings (text), nodes, or arrays of them; null children are skipped.
export function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') n.addEventListener(k.slice(2), v);
    else if (k === 'value' && 'value' in n) n.value = String(v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  append(n, children);
  return n;
}

function append(n, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(n, c);
    else if (c instanceof Node) n.appendChild(c);
    else n.appendChild(document.createTextNode(String(c)));
  }
}

// clear empties a node and returns it.
export function clear(n) {
  while (n.firstChild) n.removeChild(n.firstChild);
  return n;
}

let ids = 0;
const uid = (p) => `${p}-${++ids}`;

// field is one labelled form control with a slot for its error:
//   field({name, label, type, value, help, placeholder, required,
//          options: [[value, text]] (a select), rows (a textarea), attrs})
// The control's name is the API field its error's param names.
export function field(o) {
  const id = uid('f-' + o.name);
  const errID = id + '-err';
  const helpID = id + '-help';
  const describedBy = [o.help ? helpID : '', errID].filter(Boolean).join(' ');
  const common = { id, name: o.name, 'aria-describedby': describedBy, required: !!o.required, placeholder: o.placeholder, ...(o.attrs || {}) };
  let control;
  if (o.options && o.multiple) { // a list: its text is the selected values, comma-separated (values)
    const chosen = new Set(String(o.value ?? '').split(',').map((v) => v.trim()).filter(Boolean));
    control = el('select', { ...common, multiple: true, size: Math.min(Math.max(o.options.length, 2), 8) },
      o.options.map(([v, t]) => el('option', { value: v, selected: chosen.has(String(v)) }, t)));
  } else if (o.options) {
    control = el('select', common, o.options.map(([v, t]) => el('option', { value: v, selected: String(v) === String(o.value ?? '') }, t)));
  } else if (o.rows) {
    control = el('textarea', { ...common, rows: o.rows }, o.value ?? '');
  } else if (o.type === 'checkbox') {
    control = el('input', { ...common, type: 'checkbox', checked: !!o.value });
  } else {
    control = el('input', { ...common, type: o.type || 'text', value: o.value ?? '', autocomplete: o.autocomplete || 'off' });
  }
  return el('div', { class: 'field' + (o.type === 'checkbox' ? ' check' : '') },
    el('label', { for: id }, o.label),
    control,
    o.help ? el('p', { class: 'help', id: helpID }, o.help) : null,
    el('p', { class: 'field-error', id: errID, hidden: true }));
}

// form builds a form of fields; onSubmit(values, form) runs on submit
// with the controls' values by name (strings; checkboxes booleans). An
// APIError it throws is shown next to the field its param names, or at
// the form's top; the submit button is disabled while it runs.
export function form({ fields, submit = 'Save', onSubmit, extra }) {
  const top = el('p', { class: 'form-error', role: 'alert', hidden: true });
  const button = el('button', { type: 'submit', class: 'primary' }, submit);
  const f = el('form', { novalidate: true }, top, fields, extra || null, el('div', { class: 'actions' }, button));
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(f);
    button.disabled = true;
    try {
      await onSubmit(values(f), f);
    } catch (err) {
      showError(f, err);
    } finally {
      button.disabled = false;
    }
  });
  return f;
}

// values reads a form's controls by name.
export function values(f) {
  const out = {};
  for (const c of f.querySelectorAll('input[name], select[name], textarea[name]')) {
    out[c.name] = c.type === 'checkbox' ? c.checked : c.multiple ? [...c.selectedOptions].map((o) => o.value).join(', ') : c.value.trim();
  }
  return out;
}

export function clearErrors(f) {
  for (const p of f.querySelectorAll('.field-error, .form-error')) {
    p.hidden = true;
    p.textContent = '';
  }
  for (const c of f.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
}

// showError shows err in form f: next to the control named by the API
// error's param (focused, aria-invalid), else at the form's top.
export function showError(f, err) {
  const msg = err instanceof Error ? err.message : String(err);
  const param = err instanceof APIError ? err.param : err && err.param;
  // The control named param, else one of a nested field it names
  // (param "model" for the control "litellm_params.model").
  const c = param ? f.querySelector(`[name="${CSS.escape(param)}"]`) || f.querySelector(`[name$=".${CSS.escape(param)}"]`) : null;
  if (c) {
    const slot = document.getElementById(c.id + '-err');
    slot.textContent = msg;
    slot.hidden = false;
    c.setAttribute('aria-invalid', 'true');
    c.focus();
    return;
  }
  const top = f.querySelector('.form-error');
  top.textContent = msg;
  top.hidden = false;
  top.scrollIntoView({ block: 'nearest' });
}

// errorBox is an error shown in place of content (a list the API refused
// to give, e.g. a 403): never a blank page.
export function errorBox(err) {
  const status = err && err.status ? ` (HTTP ${err.status})` : '';
  return el('div', { class: 'error-box', role: 'alert' },
    el('strong', {}, 'The admin API refused' + status + ': '), err instanceof Error ? err.message : String(err));
}

// table renders rows under columns [{label, value: row => string|Node,
// class}]; empty: text when there are no rows.
export function table(columns, rows, empty = 'Nothing here yet.') {
  if (!rows || rows.length === 0) return el('p', { class: 'empty' }, empty);
  return el('div', { class: 'table-wrap' },
    el('table', {},
      el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col', class: c.class }, c.label)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, columns.map((c) => el('td', { class: c.class, 'data-label': c.label }, cell(c.value(r)))))))));
}

function cell(v) {
  if (v === null || v === undefined || v === '') return '—';
  return v;
}

// pager is "Previous / Page n of m / Next" calling onPage(n).
export function pager({ page, pages, onPage }) {
  pages = Math.max(1, pages || 1);
  return el('nav', { class: 'pager', 'aria-label': 'Pages' },
    el('button', { type: 'button', disabled: page <= 1, onclick: () => onPage(page - 1) }, '← Previous'),
    el('span', {}, `Page ${page} of ${pages}`),
    el('button', { type: 'button', disabled: page >= pages, onclick: () => onPage(page + 1) }, 'Next →'));
}

// copyButton copies text to the clipboard.
export function copyButton(text, label = 'Copy') {
  const b = el('button', { type: 'button', class: 'copy' }, label);
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      toast('Copied to the clipboard');
    } catch {
      toast('Copy failed: select the text and copy it by hand', 'error');
    }
  });
  return b;
}

// secret shows a value once, selectable, with a copy button.
export function secret(label, value) {
  const id = uid('secret');
  return el('div', { class: 'secret' },
    el('label', { for: id }, label),
    el('div', { class: 'secret-row' }, el('input', { id, type: 'text', readonly: true, value, class: 'mono', 'data-secret': true }), copyButton(value)));
}

// toast shows a short message for a few seconds (kind: 'ok' or 'error').
export function toast(msg, kind = 'ok') {
  const box = document.getElementById('toasts');
  const t = el('div', { class: 'toast ' + kind }, msg);
  box.appendChild(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

// button is a plain button calling onClick; a thrown error becomes a toast.
export function button(label, onClick, cls = '') {
  const b = el('button', { type: 'button', class: cls }, label);
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      await onClick();
    } catch (err) {
      toast(err.message || String(err), 'error');
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// link is an in-console link to route with query params.
export function link(text, route, params) {
  return el('a', { href: href(route, params) }, text);
}

// href is the fragment of route with query params (empty ones left out).
export function href(route, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return '#/' + route + (s ? '?' + s : '');
}

// Formatting.
export const money = (v) => (v === null || v === undefined ? '' : '$' + Number(v).toFixed(Number(v) !== 0 && Math.abs(v) < 0.01 ? 6 : 2));
export const date = (v) => (v ? new Date(v).toLocaleString() : '');
export const num = (v) => (v === null || v === undefined ? '' : Number(v).toLocaleString());
