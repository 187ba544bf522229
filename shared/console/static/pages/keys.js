// The keys page: list (search by alias, filter by team or user, paging).
import { el, table, pager, errorBox, money, date } from '../ui.js';

export default {
  id: 'keys',
  title: 'Keys',
  async render(root, { api, params, go }) {
    root.append(el('h1', {}, 'Keys'));
    const page = Number(params.get('page')) || 1;
    const query = { page, size: 20, return_full_object: true, key_alias: params.get('key_alias'), team_id: params.get('team_id'), user_id: params.get('user_id') };
    let res;
    try {
      res = await api.get('/key/list', query);
    } catch (e) {
      root.append(errorBox(e));
      return;
    }
    root.append(table([
      { label: 'Alias', value: (k) => k.key_alias || k.key_name },
      { label: 'User', value: (k) => k.user_id },
      { label: 'Team', value: (k) => k.team_id },
      { label: 'Spend', value: (k) => money(k.spend) },
      { label: 'Budget', value: (k) => money(k.max_budget) },
      { label: 'Created', value: (k) => date(k.created_at) },
    ], res.keys, 'No keys.'));
    root.append(pager({ page, pages: res.total_pages, onPage: (p) => go('keys', { ...Object.fromEntries(params), page: p }) }));
  },
};
