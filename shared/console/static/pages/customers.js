// The end users page: the customers requests name in "user"
// (/customer/*; proxy admins and viewers only: anyone else sees the
// API's 403). ?edit=<id> opens an end user's form.
import { button, toast, link } from '../ui.js';
import { isAdmin, isViewer } from '../roles.js';
import { listPage, rowActions } from '../records.js';
import { customer, flat } from '../specs.js';

export default listPage({
  id: 'customers',
  title: 'End users',
  visible: isViewer,
  kind: customer,
  path: '/customer/list',
  flat,
  key: 'user_id',
  label: 'Search by ID or name',
  search: ['user_id', 'alias'],
  empty: 'No end users.',
  actions: ({ api, me, reload }, e, rest) => (isAdmin(me) ? rowActions(e.user_id,
    link('Edit', 'customers', { ...rest, edit: e.user_id }),
    button(e.blocked ? 'Unblock' : 'Block', async () => {
      await api.post(e.blocked ? '/customer/unblock' : '/customer/block', { user_ids: [e.user_id] });
      toast(`${e.user_id} ${e.blocked ? 'unblocked' : 'blocked'}`);
      reload();
    }),
    button('Delete', async () => {
      if (!window.confirm(`Delete end user ${e.user_id}?`)) return;
      await api.post('/customer/delete', { user_ids: [e.user_id] });
      toast(`${e.user_id} deleted`);
      reload();
    }, 'danger')) : ''),
  edit: { noun: 'end user', path: '/customer/update', test: 'edit-customer' },
  create: { noun: 'end user', path: '/customer/new', test: 'new-customer', name: (e) => e.user_id },
});
