// The users page: internal users and admins (/user/list, which pages;
// proxy admins and viewers only: anyone else sees the API's 403).
import { el, table, pager, link, button, toast, field, form, secret, money, date } from '../ui.js';
import { isAdmin, isViewer } from '../roles.js';
import { budgetSpec, specForm, panel, fetched, rowActions } from './records.js';

export const roleOptions = [
  ['internal_user', 'internal_user'],
  ['internal_user_viewer', 'internal_user_viewer'],
  ['proxy_admin', 'proxy_admin'],
  ['proxy_admin_viewer', 'proxy_admin_viewer'],
];

// userSpec is a user's form: /user/new and /user/update's fields.
export const userSpec = [
  { name: 'user_id', label: 'User ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.' },
  { name: 'user_email', label: 'Email', kind: 'str', type: 'email' },
  { name: 'user_alias', label: 'Name (user_alias)', kind: 'str' },
  { name: 'user_role', label: 'Role', kind: 'select', options: roleOptions, default: 'internal_user' },
  { name: 'models', label: 'Models', kind: 'list', help: 'Model groups the user may use, comma-separated; empty: all.' },
  ...budgetSpec,
  { name: 'metadata', label: 'Metadata (JSON object)', kind: 'json' },
];

// newUserSpec adds what only /user/new takes: a key made with the user.
const newUserSpec = [
  ...userSpec,
  { name: 'auto_create_key', label: 'Create a key for the user', kind: 'bool', create: true },
  { name: 'key_alias', label: 'Its key alias', kind: 'str', create: true },
];

export default {
  id: 'users',
  title: 'Users',
  visible: isViewer,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    root.append(el('h1', {}, 'Users'));
    const filter = form({
      fields: [
        field({ name: 'role', label: 'Role', options: [['', 'any role'], ...roleOptions], value: params.get('role') || '' }),
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
      root.append(table([
        { label: 'User', value: (u) => link(u.user_id, 'user', { user_id: u.user_id }), class: 'mono' },
        { label: 'Email', value: (u) => u.user_email },
        { label: 'Name', value: (u) => u.user_alias },
        { label: 'Role', value: (u) => u.user_role },
        { label: 'Teams', value: (u) => String((u.teams || []).length) },
        { label: 'Spend', value: (u) => money(u.spend || 0) + (u.max_budget != null ? ' of ' + money(u.max_budget) : '') },
        { label: 'Created', value: (u) => date(u.created_at) },
        { label: 'Actions', value: (u) => (isAdmin(me) ? rowActions(u.user_id, userDelete(api, u, reload)) : '') },
      ], res.users, 'No users.'));
      root.append(pager({ page, pages: res.total_pages, onPage: (p) => go('users', { ...Object.fromEntries(params), page: p }) }));
    }
    if (isAdmin(me)) {
      const slot = el('div', {});
      root.append(panel('New user', slot, specForm({
        spec: newUserSpec,
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

// userDelete deletes a user with its keys (/user/delete).
export function userDelete(api, u, after) {
  return button('Delete', async () => {
    if (!window.confirm(`Delete user ${u.user_id} and its keys?`)) return;
    await api.post('/user/delete', { user_ids: [u.user_id] });
    toast(`User ${u.user_id} deleted`);
    after();
  }, 'danger');
}
