// The users page: internal users and admins (/user/list, which pages;
// proxy admins and viewers only: anyone else sees the API's 403).
import { el, table, pager, link, toast, field, form, secret } from '../ui.js';
import { isAdmin, isViewer } from '../roles.js';
import { specForm, panel, fetched, rowActions, columns } from '../records.js';
import { user, userRoles, userDelete } from '../specs.js';

export default {
  id: 'users',
  title: 'Users',
  visible: isViewer,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    root.append(el('h1', {}, 'Users'));
    const filter = form({
      fields: [
        field({ name: 'role', label: 'Role', options: [['', 'any role'], ...userRoles], value: params.get('role') || '' }),
        field({ name: 'user_ids', label: 'User IDs', value: params.get('user_ids') || '', placeholder: 'comma-separated' }),
      ],
      submit: 'Filter',
      onSubmit: (v) => go('users', { role: v.role, user_ids: v.user_ids.replace(/\s+/g, ''), page: 1 }),
    });
    filter.classList.add('inline');
    root.append(el('div', { class: 'toolbar' }, filter));
    const page = Number(params.get('page')) || 1;
    const res = await fetched(root, () => api.get('/user/list', { page, page_size: 25, role: params.get('role'), user_ids: params.get('user_ids') }));
    if (res) {
      root.append(table(columns(user, ctx,
        { label: 'Actions', value: (u) => (isAdmin(me) ? rowActions(u.user_id, userDelete(api, u, reload)) : '') }), res.users, 'No users.'));
      root.append(pager({ page, pages: res.total_pages, onPage: (p) => go('users', { ...Object.fromEntries(params), page: p }) }));
    }
    if (isAdmin(me)) {
      const slot = el('div', {});
      root.append(panel('New user', slot, specForm({
        spec: user.fields,
        submit: 'Create user',
        test: 'new-user',
        onSave: async (body) => {
          body.auto_create_key = !!body.auto_create_key; // unticked: no key (the API's default is one)
          const u = await api.post('/user/new', body);
          toast(`User ${u.user_id} created`);
          slot.replaceChildren(el('p', {}, 'User ', link(u.user_id, 'user', { user_id: u.user_id }), ' created.'));
          if (u.key) slot.append(secret('Its key (shown once: copy it now)', u.key));
        },
      })));
    }
  },
};
