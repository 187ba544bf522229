// records.js: the DOM side of the form model (form.js) and what the
// record pages share. A record kind (specs.js) is {fields, columns, facts}:
// its fields (form.js's spec, plus display-only entries with no kind)
// drive the create and edit forms, and the columns and facts name the
// fields a list and a detail page show, each by its show(record, ctx)
// (a list cell by its cell, when it has one; else the record's value),
// under its title (else its label). An optional fact left empty is left
// out; any other empty value shows as a dash.
import { el, field, form, table, pager, errorBox, money, date, button, toast, clear, link } from './ui.js';
import { formFields, body, text, at, choices } from './form.js';
import { isAdmin } from './roles.js';

// specFields renders spec's controls with record's values (a new record:
// none); editing, the create-only fields are left out, and a field whose
// when(me) is false too. Consecutive fields of one group share a
// fieldset. A field's label and help may be functions of (record, me).
export function specFields(spec, record, me, loaded) {
  const out = [];
  let set = null;
  for (const f of formFields(spec, record)) {
    if (f.when && !f.when(me)) continue;
    const options = choices(f, loaded, record ? at(f, record) : undefined); // form.js: a picker, or null
    const control = field({
      name: f.name,
      label: typeof f.label === 'function' ? f.label(record, me) : f.label,
      help: options && f.pickHelp ? f.pickHelp : typeof f.help === 'function' ? f.help(record, me) : f.help,
      type: f.kind === 'bool' ? 'checkbox' : f.type,
      rows: f.kind === 'json' ? 3 : undefined,
      options,
      multiple: !!options && f.kind === 'list',
      required: f.required,
      placeholder: 'placeholder' in f ? f.placeholder : f.kind === 'list' ? 'comma-separated' : f.kind === 'json' ? '{"key": "value"}' : undefined,
      value: record ? text(f.kind, at(f, record)) : f.kind === 'bool' ? false : f.default ?? '',
      attrs: f.kind === 'num' ? { inputmode: 'decimal' } : undefined,
      autocomplete: f.autocomplete,
    });
    if (!f.group) {
      set = null;
      out.push(control);
    } else {
      if (!set || set.dataset.group !== f.group) {
        set = el('fieldset', { 'data-group': f.group }, el('legend', {}, f.group));
        out.push(set);
      }
      set.append(control);
    }
  }
  return out;
}

// specForm is a form of spec's fields: onSave(body, values, formEl) gets
// the body built from what changed (form.js's body); test names it for
// the browser tests (data-test).
export function specForm({ spec, record, me, submit, onSave, extra, test, loaded }) {
  const f = form({ fields: specFields(spec, record, me, loaded), submit, extra, onSubmit: (v, formEl) => onSave(body(spec, v, record), v, formEl) });
  if (test) f.dataset.test = test;
  return f;
}

const entry = (kind, name) => {
  const f = kind.fields.find((x) => x.name === name);
  if (!f) throw new Error(`no field ${name} in the spec`);
  return f;
};
const shown = (show, f, r, ctx) => (show ? show(r, ctx) : at(f, r));

// columns are a kind's list columns for table(), then extra ones.
export function columns(kind, ctx, ...extra) {
  return [...kind.columns.map((name) => {
    const f = entry(kind, name);
    return { label: f.title || f.label, class: f.class, value: (r) => shown(f.cell || f.show, f, r, ctx) };
  }), ...extra];
}

// facts is a detail page's list of a record's facts (a fact whose show
// gives null is left out).
export function facts(kind, r, ctx) {
  return el('dl', { class: 'facts' }, kind.facts.map((name) => {
    const f = entry(kind, name);
    const v = shown(f.show, f, r, ctx);
    const empty = v === null || v === undefined || v === '';
    return empty && f.optional ? null : [el('dt', {}, f.title || f.label), el('dd', {}, empty ? '—' : v)];
  }));
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

// recordPage is the start of a page showing one record (a team, a user,
// an organization): its heading (the id until the record is read, then
// its name) and the record (read with load) or the API's refusal in its
// place. It returns the record, or null.
export async function recordPage(root, noun, id, load, name) {
  const h = el('h1', {}, noun + ' ', el('span', { class: 'mono' }, id));
  root.append(h);
  const r = await fetched(root, load);
  if (r && name) h.replaceChildren(noun + ' ' + name(r));
  return r;
}

// members is a group's members section (a team's or an organization's:
// the routes' bodies differ only in names): their table, with Edit and
// Remove for those who may manage them (the API decides), the form
// changing a member's role and budget in the group, and the form adding
// one. m = {noun ('team'), id ({team_id: ...}), spec (specs.js's member
// spec), rows, manage, add, update and remove ([method, path]), test (the
// forms' data-test prefix), role(member), budget(member) (its budget in
// the group), spend: [label, (member) => text], shown: [label, (member)
// => text] (the budget column)}.
export function members(ctx, m) {
  const { api, me, reload } = ctx;
  const call = ([method, path], b) => api.request(method, path, { body: b });
  const slot = el('div', { class: 'member-edit' });
  // edit shows the form changing member x's role and budget in slot.
  const edit = (x) => {
    const f = specForm({
      spec: m.spec.fields,
      record: { role: m.role(x), [m.spec.budget]: m.budget(x) },
      me,
      submit: 'Save member',
      test: m.test + 'member-edit',
      onSave: async (b) => {
        await call(m.update, { ...m.id, user_id: x.user_id, ...b });
        toast(`${x.user_id} saved`);
        reload();
      },
    });
    clear(slot).append(panel('Edit member ' + x.user_id, f, button('Cancel', () => clear(slot))));
    f.querySelector('select').focus();
  };
  const list = table([
    { label: 'User', value: (x) => x.user_id, class: 'mono' },
    { label: 'Email', value: (x) => x.user_email },
    { label: 'Role', value: m.role },
    { label: m.spend[0], value: m.spend[1] },
    { label: m.shown[0], value: m.shown[1] },
    { label: 'Actions', value: (x) => (m.manage ? rowActions(x.user_id,
      button('Edit', () => edit(x)),
      button('Remove', async () => {
        if (!window.confirm(`Remove ${x.user_id} from the ${m.noun}?`)) return;
        await call(m.remove, { ...m.id, user_id: x.user_id });
        toast(`${x.user_id} removed`);
        reload();
      }, 'danger')) : '') },
  ], m.rows, 'No members.');
  if (!m.manage) return [el('h2', {}, 'Members'), list, slot];
  const add = specForm({
    spec: m.spec.fields,
    me,
    submit: 'Add member',
    test: m.test + 'member-add',
    onSave: async (b, v) => {
      const member = { role: b.role };
      for (const k of ['user_id', 'user_email']) if (k in b) member[k] = b[k];
      delete b.role;
      delete b.user_id;
      delete b.user_email;
      try {
        await call(m.add, { ...m.id, member, ...b });
      } catch (e) {
        if (e.param === 'member') e.param = v.user_id || !v.user_email ? 'user_id' : 'user_email'; // the member's own fields
        throw e;
      }
      toast(`${v.user_id || v.user_email} added`);
      reload();
    },
  });
  return [el('h2', {}, 'Members'), list, slot, panel('Add a member', add)];
}

// editPanel is a proxy admin's form editing a record of kind (nothing for
// anyone else: the API would refuse it): save(body) sends what changed,
// then the page renders again.
export function editPanel(ctx, { noun, kind, record, test, save }) {
  if (!isAdmin(ctx.me)) return null;
  return panel('Edit ' + noun, specForm({
    spec: kind.fields,
    record,
    me: ctx.me,
    submit: 'Save ' + noun,
    test,
    onSave: async (b) => {
      await save(b);
      toast(noun[0].toUpperCase() + noun.slice(1) + ' saved');
      ctx.reload();
    },
  }));
}

// listPage is a page listing records the API answers whole, from one
// description: {id, title, visible, kind (specs.js), path (the list
// route), flat (a row as the page shows it), key (the record's id field),
// search, label, empty, actions(ctx, row, rest) (a last column), edit
// ({noun, path, test}: a proxy admin's form for the row whose key is the
// route's edit param, posting what changed with the key to path), create
// ({noun, path, test, name(record), then(ctx, record)}: a proxy admin's
// form posting to path; then, else the page renders again)}.
export function listPage(d) {
  return {
    id: d.id,
    title: d.title,
    visible: d.visible,
    async render(root, ctx) {
      const { api, me, params } = ctx;
      root.append(el('h1', {}, d.title));
      const list = await fetched(root, () => api.get(d.path));
      const admin = isAdmin(me);
      const rest = Object.fromEntries(params);
      delete rest.edit;
      const slot = el('div', { class: 'record-edit' });
      if (list) {
        const rows = d.flat ? list.map(d.flat) : list;
        const actions = d.actions ? [{ label: 'Actions', value: (r) => d.actions(ctx, r, rest) }] : [];
        wholeList(root, ctx, { rows, label: d.label, search: d.search, empty: d.empty, columns: columns(d.kind, ctx, ...actions) });
        const r = d.edit && admin && params.get('edit') && rows.find((x) => x[d.key] === params.get('edit'));
        if (r) {
          slot.append(panel(`Edit ${d.edit.noun} ${r[d.key]}`, specForm({
            spec: d.kind.fields,
            record: r,
            me,
            submit: 'Save ' + d.edit.noun,
            test: d.edit.test,
            onSave: async (b) => {
              await api.post(d.edit.path, { [d.key]: r[d.key], ...b });
              toast(`${r[d.key]} saved`);
              ctx.go(d.id, rest);
            },
          }), link('Cancel', d.id, rest)));
        }
      }
      root.append(slot);
      if (d.create && admin) {
        const c = d.create;
        root.append(panel('New ' + c.noun, specForm({
          spec: d.kind.fields,
          me,
          submit: 'Create ' + c.noun,
          test: c.test,
          onSave: async (b) => {
            const r = await api.post(c.path, b);
            toast(`${c.noun[0].toUpperCase() + c.noun.slice(1)} ${c.name(r)} created`);
            (c.then || ctx.reload)(ctx, r);
          },
        })));
      }
      if (slot.firstChild) slot.querySelector('input, select').focus();
    },
  };
}
