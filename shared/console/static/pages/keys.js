// The keys page: list (by alias, team or user, paged by the admin API),
// create (the secret shown once), edit, regenerate, block/unblock, delete.
// Every action is one admin API call with the signed-in key; what a role
// may not do is hidden here and refused there.
import { el, clear, field, form, table, pager, errorBox, button, secret, toast, money, date, num, href } from '../ui.js';
import { isAdmin, canWriteKeys } from '../roles.js';
import { specForm, columns } from '../records.js';
import { key } from '../specs.js';
import { allowedModels } from '../form.js';

const PAGE_SIZE = 20;

export default {
  id: 'keys',
  title: 'Keys',
  async render(root, ctx) {
    const { me, params } = ctx;
    root.append(el('h1', {}, 'Keys'));
    const shown = el('div', { class: 'shown' }); // a new secret, shown once
    root.append(shown);
    if (params.get('edit')) return editKey(root, ctx, params.get('edit'));

    root.append(filters(ctx));
    if (!me.master && me.adminTeams.length) {
      // The API lists a team admin's own keys unless asked for a team's.
      root.append(el('p', { class: 'help' }, 'Teams you administer: ',
        me.adminTeams.map((t, i) => [i ? ', ' : '', el('a', { href: href('keys', { team_id: t }) }, t)])));
    }
    const list = el('div', { class: 'list' });
    const loaded = await loadChoices(ctx.api);
    ctx.teamNames = new Map((loaded.teams || []).map((t) => [t.team_id, t.team_alias || t.team_id]));
    if (canWriteKeys(me)) root.append(createPanel(ctx, shown, () => renderList(list, ctx, shown), loaded));
    root.append(list);
    await renderList(list, ctx, shown);
  },
};

// loadChoices reads what the key form's pickers offer, as LiteLLM's UI
// does: the teams the signed-in key may list (chosen by alias) and the
// model groups it may use (/model/info). A list the API refuses leaves
// its field a text box.
async function loadChoices(api) {
  const [teams, info] = await Promise.all([
    api.get('/team/list').then((r) => (Array.isArray(r) ? r : r.teams || [])).catch(() => null),
    api.get('/model/info').then((r) => r.data || []).catch(() => null),
  ]);
  return { teams, models: info && [...new Set(info.map((d) => d.model_name))].sort() };
}

// narrowModels offers, once a team is chosen, only the models the team
// may use (form.js's allowedModels), unselecting the others.
function narrowModels(formEl, teams) {
  const team = formEl.querySelector('select[name="team_id"]');
  const models = formEl.querySelector('select[name="models"]');
  if (!team || !models || !teams) return;
  team.addEventListener('change', () => {
    const allowed = allowedModels(teams.find((t) => t.team_id === team.value));
    for (const o of models.options) {
      const ok = !allowed || allowed.includes(o.value);
      o.hidden = !ok;
      o.disabled = !ok;
      if (!ok) o.selected = false;
    }
  });
}

// filters is the search form: its values go in the URL (a typed URL is
// the same search, and the API decides what it may show).
function filters({ params, go }) {
  const f = form({
    submit: 'Search',
    fields: [
      field({ name: 'key_alias', label: 'Alias (exact)', value: params.get('key_alias') || '' }),
      field({ name: 'team_id', label: 'Team id', value: params.get('team_id') || '' }),
      field({ name: 'user_id', label: 'User id', value: params.get('user_id') || '' }),
    ],
    onSubmit: async (v) => go('keys', { ...v, page: 1 }),
  });
  f.classList.add('inline', 'toolbar');
  f.setAttribute('role', 'search');
  return f;
}

async function renderList(list, ctx, shown) {
  const { api, params, go, me } = ctx;
  const page = Math.max(1, Number(params.get('page')) || 1);
  let res;
  try {
    res = await api.get('/key/list', {
      page, size: PAGE_SIZE, return_full_object: true,
      key_alias: params.get('key_alias'), team_id: params.get('team_id'), user_id: params.get('user_id'),
    });
  } catch (e) {
    clear(list).append(errorBox(e));
    return;
  }
  const refresh = () => renderList(list, ctx, shown);
  clear(list).append(
    el('p', { class: 'help' }, `${num(res.total_count)} key${res.total_count === 1 ? '' : 's'}`),
    table(columns(key, ctx, { label: 'Actions', value: (k) => actions(k, ctx, refresh, shown) }), res.keys, 'No keys match.'),
    pager({ page, pages: res.total_pages, onPage: (p) => go('keys', { ...Object.fromEntries(params), page: p }) }));
  if (!canWriteKeys(me)) list.append(el('p', { class: 'help' }, 'Your role reads keys only.'));
}

// actions are a key's buttons; the API refuses what the role may not do,
// so only the plainly useless ones are left out.
function actions(k, { api, me }, refresh, shown) {
  if (!canWriteKeys(me)) return '';
  const label = k.key_alias || k.key_name || 'this key';
  const mayBlock = isAdmin(me) || (k.team_id && me.adminTeams.includes(k.team_id));
  return el('div', { class: 'actions' },
    el('a', { class: 'button', href: href('keys', { edit: k.token }) }, 'Edit'),
    button('Regenerate', async () => {
      if (!window.confirm(`Regenerate ${label}? Its current secret stops working at once.`)) return;
      const res = await api.post('/key/regenerate', { key: k.token });
      await refresh(); // first: the secret shows once the list no longer has the old key
      showSecret(shown, res, 'New secret of ' + label);
    }),
    mayBlock ? button(k.blocked ? 'Unblock' : 'Block', async () => {
      await api.post(k.blocked ? '/key/unblock' : '/key/block', { key: k.token });
      toast((k.blocked ? 'Unblocked ' : 'Blocked ') + label);
      await refresh();
    }) : null,
    button('Delete', async () => {
      if (!window.confirm(`Delete ${label}? Requests with it are refused from now on.`)) return;
      await api.post('/key/delete', { keys: [k.token] });
      toast('Deleted ' + label);
      await refresh();
    }, 'danger'));
}

// showSecret shows a key's secret once: it is in no URL and no storage,
// and gone when the person leaves the page.
function showSecret(shown, res, title) {
  clear(shown).append(el('div', { class: 'panel', role: 'alert' },
    el('h2', {}, title),
    el('p', {}, 'Copy it now: it is shown only once and cannot be read again.'),
    secret('Secret key', res.key),
    el('div', { class: 'actions' }, button('Done', () => clear(shown)))));
  shown.querySelector('input').focus();
  shown.querySelector('input').select();
}

function createPanel({ api, me }, shown, refresh, loaded) {
  const f = specForm({
    spec: key.fields,
    me,
    loaded,
    submit: 'Create key',
    onSave: async (body, v, formEl) => {
      const res = await api.post('/key/generate', body);
      formEl.reset();
      await refresh();
      showSecret(shown, res, 'Key ' + (res.key_alias || res.key_name) + ' created');
    },
  });
  narrowModels(f, loaded.teams);
  return el('details', { class: 'panel create' }, el('summary', {}, 'Create a key'), f);
}

async function editKey(root, { api, me, go }, hash) {
  let k;
  try {
    k = (await api.get('/key/info', { key: hash })).info;
  } catch (e) {
    root.append(errorBox(e), el('p', {}, el('a', { href: href('keys') }, '← All keys')));
    return;
  }
  const loaded = await loadChoices(api);
  const f = specForm({
    spec: key.fields,
    record: k,
    me,
    loaded,
    submit: 'Save',
    onSave: async (body, v) => {
      if (Object.keys(body).length === 0) {
        toast('Nothing changed');
        return;
      }
      body.key = hash;
      await api.post('/key/update', body);
      toast('Saved ' + (v.key_alias || k.key_name));
      go('keys');
    },
  });
  narrowModels(f, loaded.teams);
  root.append(el('div', { class: 'panel edit' },
    el('h2', {}, 'Edit ' + (k.key_alias || k.key_name)),
    el('p', { class: 'help' }, `Spend ${money(k.spend)}` + (k.budget_reset_at ? `, budget resets ${date(k.budget_reset_at)}` : '') + `; created ${date(k.created_at)}.`),
    f,
    el('p', {}, el('a', { href: href('keys') }, '← All keys'))));
}
