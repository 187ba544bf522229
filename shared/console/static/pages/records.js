// records.js: what the teams, users, end users, organizations and budgets
// pages share: forms described by a spec of the admin API's body fields,
// bodies that send what the person typed (the API validates it and its
// error shows next to the field), and lists the API answers whole (paged
// and searched here, for display only: the API decides what a list holds).
import { el, field, form, fieldError, table, pager, errorBox, money, date } from '../ui.js';

// A spec is a list of fields: {name (the API's body field), label, kind:
// 'str' | 'num' | 'list' | 'json' | 'bool' | 'select', help, options
// (kind 'select': [[value, text]]), create (only on create), readonly}.

// The budget and limit fields most records share.
export const budgetSpec = [
  { name: 'max_budget', label: 'Max budget (USD)', kind: 'num', help: 'Requests are refused once spend reaches it; empty: no budget.' },
  { name: 'soft_budget', label: 'Soft budget (USD)', kind: 'num', help: 'Alerts only.' },
  { name: 'budget_duration', label: 'Budget period', kind: 'str', help: 'When spend resets: 30s, 1h, 1d, 7d, 30d, 1mo; empty: never.' },
  { name: 'rpm_limit', label: 'Requests per minute', kind: 'num' },
  { name: 'tpm_limit', label: 'Tokens per minute', kind: 'num' },
];

// text is a record's value as a form control shows it.
function text(kind, v) {
  if (kind === 'bool') return !!v;
  if (v === null || v === undefined) return '';
  if (kind === 'list') return (v || []).join(', ');
  if (kind === 'json') return typeof v === 'object' && Object.keys(v).length === 0 ? '' : JSON.stringify(v, null, 2);
  return String(v);
}

// numeric is what a number field sends: a number when the text reads as
// one, else the text as typed, so that "abc" gets the API's own refusal
// ("max_budget: want a number of USD") next to the field.
export function numeric(v) {
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v) ? Number(v) : v;
}

// value converts a control's text to the body field of kind; empty is
// null (on an edit: clear the setting).
function value(f, v) {
  if (f.kind === 'bool') return !!v;
  if (v === '') return f.kind === 'list' ? [] : null;
  switch (f.kind) {
    case 'num':
      return numeric(v);
    case 'list':
      return v.split(',').map((s) => s.trim()).filter(Boolean);
    case 'json':
      try {
        return JSON.parse(v);
      } catch (e) {
        throw fieldError(f.name, `${f.name}: not JSON (${e.message})`);
      }
  }
  return v;
}

// specFields renders the spec's controls with record's values (a new
// record: none); editing, the create-only fields are left out.
export function specFields(spec, record) {
  return spec.filter((f) => !(record && f.create)).map((f) => field({
    name: f.name,
    label: f.label,
    help: f.help,
    type: f.kind === 'bool' ? 'checkbox' : f.type,
    rows: f.kind === 'json' ? 3 : undefined,
    options: f.options,
    required: f.required,
    placeholder: f.placeholder || (f.kind === 'list' ? 'comma-separated' : f.kind === 'json' ? '{"key": "value"}' : undefined),
    value: record ? text(f.kind, record[f.name]) : f.kind === 'bool' ? false : f.default ?? '',
    attrs: f.kind === 'num' ? { inputmode: 'decimal' } : undefined,
  }));
}

// body builds the request body from a form's values: creating (no
// record), the fields given; editing, only the fields whose text changed
// (emptied: null, which clears them), so an edit changes nothing else.
export function body(spec, values, record) {
  const out = {};
  for (const f of spec) {
    if (!(f.name in values) || f.readonly) continue;
    const v = values[f.name];
    if (record) {
      if (v === text(f.kind, record[f.name])) continue;
    } else if (v === '' || v === false) continue;
    out[f.name] = value(f, v);
  }
  return out;
}

// specForm is a form of spec's fields: onSave(body) gets the body built
// from what changed (see body); test names it for the browser tests
// (data-test).
export function specForm({ spec, record, submit, onSave, extra, test }) {
  const f = form({ fields: specFields(spec, record), submit, extra, onSubmit: (v) => onSave(body(spec, v, record)) });
  if (test) f.dataset.test = test;
  return f;
}

// panel is a titled box holding a form.
export function panel(title, ...content) {
  return el('div', { class: 'panel' }, el('h2', {}, title), ...content);
}

// budgetText shows spend against a budget, and its reset time.
export function budgetText(spend, max, resetAt) {
  const s = money(spend || 0) + (max !== null && max !== undefined ? ' of ' + money(max) : '');
  return resetAt ? `${s} (resets ${date(resetAt)})` : s;
}

// blockedTag marks a blocked record.
export const blockedTag = (r) => (r.blocked ? el('span', { class: 'tag bad' }, 'blocked') : el('span', { class: 'tag' }, 'active'));

// wholeList renders a list the API answers whole (team, end user,
// organization and budget lists do not page): a search box over the
// fields named, the matching rows under columns, and a pager of size
// rows; q and page live in the route's params.
export function wholeList(root, ctx, { rows, columns, search, label, empty, size = 20 }) {
  const { params, go } = ctx;
  const id = root.className.replace(/^.*page-/, '');
  const q = (params.get('q') || '').toLowerCase();
  const f = form({
    fields: [field({ name: 'q', label, value: params.get('q') || '', type: 'search' })],
    submit: 'Search',
    onSubmit: (v) => go(id, { ...Object.fromEntries(params), q: v.q, page: 1 }),
  });
  f.classList.add('inline');
  root.append(el('div', { class: 'toolbar' }, f));
  const matched = q ? rows.filter((r) => search.some((k) => String(r[k] ?? '').toLowerCase().includes(q))) : rows;
  const pages = Math.max(1, Math.ceil(matched.length / size));
  const page = Math.min(Math.max(1, Number(params.get('page')) || 1), pages);
  root.append(table(columns, matched.slice((page - 1) * size, page * size), empty));
  root.append(pager({ page, pages, onPage: (p) => go(id, { ...Object.fromEntries(params), page: p }) }));
}

// fetched calls load; a refusal shows the API's error under the heading
// and returns null (a typed URL the role may not read: its 403).
export async function fetched(root, load) {
  try {
    return await load();
  } catch (e) {
    root.append(errorBox(e));
    return null;
  }
}

// rowActions groups a table row's buttons, labelled by the record they act
// on (a screen reader hears "Actions for carol", not a bare "Edit").
export function rowActions(name, ...buttons) {
  return el('div', { class: 'actions', role: 'group', 'aria-label': 'Actions for ' + name }, ...buttons);
}
