// The end users page: the customers requests name in "user"
// (/customer/*; proxy admins and viewers only: anyone else sees the
// API's 403). ?edit=<id> opens an end user's form.
import { el, button, toast, link } from '../ui.js';
import { isAdmin, isViewer } from '../roles.js';
import { budgetSpec, specForm, panel, budgetText, blockedTag, wholeList, fetched, rowActions } from './records.js';

const spec = [
  { name: 'user_id', label: 'End user ID', kind: 'str', create: true, required: true, help: 'What requests send as "user".' },
  { name: 'alias', label: 'Name (alias)', kind: 'str' },
  { name: 'allowed_model_region', label: 'Allowed model region', kind: 'select', options: [['', 'any'], ['eu', 'eu'], ['us', 'us']],
    help: 'Requests of this end user go only to deployments in this region.' },
  ...budgetSpec,
];

// budgetIDSpec links a reusable budget instead (proxy admins only).
const budgetIDSpec = { name: 'budget_id', label: 'or a reusable budget ID', kind: 'str', help: 'Replaces the budget and limits above.' };

// flat is an end user as its form shows it: the budget table's fields
// beside its own.
const flat = (e) => ({ ...e, ...(e.litellm_budget_table || {}), budget_id: e.budget_id ?? null });

export default {
  id: 'customers',
  title: 'End users',
  visible: isViewer,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    root.append(el('h1', {}, 'End users'));
    const list = await fetched(root, () => api.get('/customer/list'));
    const admin = isAdmin(me);
    const specAll = [...spec, budgetIDSpec];
    const editing = params.get('edit');
    const slot = el('div', { class: 'customer-edit' });
    if (list) {
      wholeList(root, ctx, {
        rows: list,
        label: 'Search by ID or name',
        search: ['user_id', 'alias'],
        empty: 'No end users.',
        columns: [
          { label: 'End user', value: (e) => e.user_id, class: 'mono' },
          { label: 'Name', value: (e) => e.alias },
          { label: 'Region', value: (e) => e.allowed_model_region || 'any' },
          { label: 'Spend', value: (e) => { const b = flat(e); return budgetText(e.spend, b.max_budget, b.budget_reset_at); } },
          { label: 'Status', value: blockedTag },
          { label: 'Actions', value: (e) => (admin ? rowActions(e.user_id,
            link('Edit', 'customers', { ...Object.fromEntries(params), edit: e.user_id }),
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
            }, 'danger')) : '') },
        ],
      });
      const e = editing && list.find((x) => x.user_id === editing);
      if (admin && e) {
        const rest = Object.fromEntries(params);
        delete rest.edit;
        slot.append(panel('Edit end user ' + e.user_id, specForm({
          spec: specAll,
          record: flat(e),
          submit: 'Save end user',
          test: 'edit-customer',
          onSave: async (body) => {
            await api.post('/customer/update', { user_id: e.user_id, ...body });
            toast(`${e.user_id} saved`);
            go('customers', rest);
          },
        }), link('Cancel', 'customers', rest)));
      }
    }
    root.append(slot);
    if (admin) {
      root.append(panel('New end user', specForm({
        spec: specAll,
        submit: 'Create end user',
        test: 'new-customer',
        onSave: async (body) => {
          const e = await api.post('/customer/new', body);
          toast(`End user ${e.user_id} created`);
          reload();
        },
      })));
    }
    if (slot.firstChild) slot.querySelector('input, select').focus();
  },
};
