// The budgets page: reusable budgets that end users, team members and
// organizations link by budget_id (/budget/*; proxy admins write them,
// viewers read them, anyone else sees the API's 403). ?edit=<id> opens
// a budget's form.
import { el, link, button, toast, money, date } from '../ui.js';
import { isAdmin, isViewer } from '../roles.js';
import { budgetSpec, specForm, panel, wholeList, fetched, rowActions } from './records.js';

const spec = [
  { name: 'budget_id', label: 'Budget ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.' },
  ...budgetSpec,
  { name: 'max_parallel_requests', label: 'Parallel requests', kind: 'num' },
  { name: 'model_max_budget', label: 'Per-model budgets (JSON)', kind: 'json', placeholder: '{"gpt-4o": {"max_budget": 10, "budget_duration": "1d"}}' },
];

export default {
  id: 'budgets',
  title: 'Budgets',
  visible: isViewer,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    root.append(el('h1', {}, 'Budgets'));
    const list = await fetched(root, () => api.get('/budget/list'));
    const admin = isAdmin(me);
    const rest = Object.fromEntries(params);
    delete rest.edit;
    if (list) {
      wholeList(root, ctx, {
        rows: list,
        label: 'Search by ID',
        search: ['budget_id'],
        empty: 'No budgets.',
        columns: [
          { label: 'Budget ID', value: (b) => b.budget_id, class: 'mono' },
          { label: 'Max budget', value: (b) => money(b.max_budget) },
          { label: 'Soft budget', value: (b) => money(b.soft_budget) },
          { label: 'Period', value: (b) => b.budget_duration },
          { label: 'Resets', value: (b) => date(b.budget_reset_at) },
          { label: 'Limits', value: (b) => `${b.rpm_limit ?? '—'} rpm, ${b.tpm_limit ?? '—'} tpm, ${b.max_parallel_requests ?? '—'} parallel` },
          { label: 'Actions', value: (b) => (admin ? rowActions(b.budget_id,
            link('Edit', 'budgets', { ...rest, edit: b.budget_id }),
            button('Delete', async () => {
              if (!window.confirm(`Delete budget ${b.budget_id}?`)) return;
              await api.post('/budget/delete', { id: b.budget_id });
              toast(`Budget ${b.budget_id} deleted`);
              reload();
            }, 'danger')) : '') },
        ],
      });
      const b = admin && list.find((x) => x.budget_id === params.get('edit'));
      if (b) {
        const p = panel('Edit budget ' + b.budget_id, specForm({
          spec,
          record: b,
          submit: 'Save budget',
          test: 'edit-budget',
          onSave: async (body) => {
            await api.post('/budget/update', { budget_id: b.budget_id, ...body });
            toast(`Budget ${b.budget_id} saved`);
            go('budgets', rest);
          },
        }), link('Cancel', 'budgets', rest));
        root.append(p);
        p.querySelector('input').focus();
      }
    }
    if (admin) {
      root.append(panel('New budget', specForm({
        spec,
        submit: 'Create budget',
        test: 'new-budget',
        onSave: async (body) => {
          const b = await api.post('/budget/new', body);
          toast(`Budget ${b.budget_id} created`);
          reload();
        },
      })));
    }
  },
};
