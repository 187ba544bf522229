// The budgets page: reusable budgets that end users, team members and
// organizations link by budget_id (/budget/*; proxy admins write them,
// viewers read them, anyone else sees the API's 403). ?edit=<id> opens
// a budget's form.
import { link, button, toast } from '../ui.js';
import { isAdmin, isViewer } from '../roles.js';
import { listPage, rowActions } from '../records.js';
import { budget } from '../specs.js';

export default listPage({
  id: 'budgets',
  title: 'Budgets',
  visible: isViewer,
  kind: budget,
  path: '/budget/list',
  key: 'budget_id',
  label: 'Search by ID',
  search: ['budget_id'],
  empty: 'No budgets.',
  actions: ({ api, me, reload }, b, rest) => (isAdmin(me) ? rowActions(b.budget_id,
    link('Edit', 'budgets', { ...rest, edit: b.budget_id }),
    button('Delete', async () => {
      if (!window.confirm(`Delete budget ${b.budget_id}?`)) return;
      await api.post('/budget/delete', { id: b.budget_id });
      toast(`Budget ${b.budget_id} deleted`);
      reload();
    }, 'danger')) : ''),
  edit: { noun: 'budget', path: '/budget/update', test: 'edit-budget' },
  create: { noun: 'budget', path: '/budget/new', test: 'new-budget', name: (b) => b.budget_id },
});
