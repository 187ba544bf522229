// The user page (#/user?user_id=): a user's settings, teams and keys
// (/user/info: a user reads only itself, a proxy admin or viewer anyone;
// a typed URL for another user shows the API's 403).
import { el, link, toast, date } from '../ui.js';
import { isAdmin } from '../roles.js';
import { specForm, panel, budgetText, fetched } from './records.js';
import { userSpec, userDelete } from './users.js';

export default {
  id: 'user',
  title: 'User',
  nav: false,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    const id = params.get('user_id') || '';
    root.append(el('h1', {}, 'User ', el('span', { class: 'mono' }, id)));
    const info = await fetched(root, () => api.get('/user/info', { user_id: id }));
    if (!info) return;
    const u = info.user_info;
    const dl = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
    root.append(el('dl', { class: 'facts' },
      dl('User ID', el('span', { class: 'mono' }, u.user_id)),
      dl('Email', u.user_email || '—'),
      dl('Name', u.user_alias || '—'),
      dl('Role', u.user_role),
      dl('Models', (u.models || []).length ? u.models.join(', ') : 'all'),
      dl('Spend', budgetText(u.spend, u.max_budget, u.budget_reset_at)),
      dl('Teams', (info.teams || []).length ? info.teams.map((t, i) => [i ? ', ' : '', link(t.team_alias || t.team_id, 'team', { team_id: t.team_id })]) : 'none'),
      dl('Keys', link(`${(info.keys || []).length} keys: open the keys page`, 'keys', { user_id: u.user_id })),
      dl('Created', date(u.created_at))));
    if (!isAdmin(me)) return;
    root.append(el('div', { class: 'actions' }, userDelete(api, u, () => go('users'))));
    root.append(panel('Edit user', specForm({
      spec: userSpec,
      record: u,
      submit: 'Save user',
      test: 'edit-user',
      onSave: async (body) => {
        await api.post('/user/update', { user_id: u.user_id, ...body });
        toast('User saved');
        reload();
      },
    })));
  },
};
