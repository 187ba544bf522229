// The user page (#/user?user_id=): a user's settings, teams and keys
// (/user/info: a user reads only itself, a proxy admin or viewer anyone;
// a typed URL for another user shows the API's 403).
import { el } from '../ui.js';
import { isAdmin } from '../roles.js';
import { recordPage, facts, editPanel } from '../records.js';
import { user, userDelete } from '../specs.js';

export default {
  id: 'user',
  title: 'User',
  nav: false,
  async render(root, ctx) {
    const { api, params, go } = ctx;
    const id = params.get('user_id') || '';
    const info = await recordPage(root, 'User', id, () => api.get('/user/info', { user_id: id }));
    if (!info) return;
    const u = info.user_info;
    root.append(facts(user, { ...u, teams: info.teams, keys: info.keys }, ctx));
    if (!isAdmin(ctx.me)) return;
    root.append(el('div', { class: 'actions' }, userDelete(api, u, () => go('users'))),
      editPanel(ctx, { noun: 'user', kind: user, record: u, test: 'edit-user', save: (b) => api.post('/user/update', { user_id: u.user_id, ...b }) }));
  },
};
