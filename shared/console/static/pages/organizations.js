// The organizations page (/organization/*: every organization to a proxy
// admin or viewer, a user's own organizations otherwise; proxy admins
// create and delete them).
import { el, link, button, toast, money } from '../ui.js';
import { isAdmin } from '../roles.js';
import { specForm, panel, blockedTag, wholeList, fetched, rowActions } from './records.js';

// orgSpec is an organization's form: /organization/new and /update's fields.
export const orgSpec = [
  { name: 'organization_alias', label: 'Name (organization_alias)', kind: 'str' },
  { name: 'organization_id', label: 'Organization ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.' },
  { name: 'models', label: 'Models', kind: 'list', help: 'Model groups its teams may use, comma-separated; empty: all.' },
  { name: 'max_budget', label: 'Max budget (USD)', kind: 'num' },
  { name: 'soft_budget', label: 'Soft budget (USD)', kind: 'num' },
  { name: 'budget_duration', label: 'Budget period', kind: 'str', help: '30s, 1h, 1d, 7d, 30d, 1mo; empty: never resets.' },
  { name: 'rpm_limit', label: 'Requests per minute', kind: 'num' },
  { name: 'tpm_limit', label: 'Tokens per minute', kind: 'num' },
  { name: 'metadata', label: 'Metadata (JSON object)', kind: 'json' },
];

// flat is an organization as its form shows it: its budget table's fields
// (where the API shows its budget and limits) beside its own.
export const flat = (o) => {
  const b = o.litellm_budget_table || {};
  return { ...o, max_budget: b.max_budget, soft_budget: b.soft_budget, budget_duration: b.budget_duration, rpm_limit: b.rpm_limit, tpm_limit: b.tpm_limit };
};

export default {
  id: 'organizations',
  title: 'Organizations',
  visible: (me) => me.master || !!me.userID,
  async render(root, ctx) {
    const { api, me, go, reload } = ctx;
    root.append(el('h1', {}, 'Organizations'));
    const list = await fetched(root, () => api.get('/organization/list'));
    if (list) {
      wholeList(root, ctx, {
        rows: list,
        label: 'Search by name or ID',
        search: ['organization_alias', 'organization_id'],
        empty: 'No organizations.',
        columns: [
          { label: 'Name', value: (o) => link(o.organization_alias || o.organization_id, 'organization', { organization_id: o.organization_id }) },
          { label: 'Organization ID', value: (o) => o.organization_id, class: 'mono' },
          { label: 'Teams', value: (o) => String((o.teams || []).length) },
          { label: 'Members', value: (o) => String((o.members || []).length) },
          { label: 'Spend', value: (o) => money(o.spend || 0) + (flat(o).max_budget != null ? ' of ' + money(flat(o).max_budget) : '') },
          { label: 'Status', value: blockedTag },
          { label: 'Actions', value: (o) => (isAdmin(me) ? rowActions(o.organization_alias || o.organization_id, orgDelete(ctx, o, reload)) : '') },
        ],
      });
    }
    if (isAdmin(me)) {
      root.append(panel('New organization', specForm({
        spec: orgSpec,
        submit: 'Create organization',
        test: 'new-organization',
        onSave: async (body) => {
          const o = await api.post('/organization/new', body);
          toast(`Organization ${o.organization_alias || o.organization_id} created`);
          go('organization', { organization_id: o.organization_id });
        },
      })));
    }
  },
};

// orgDelete deletes an organization (the API refuses one that still has
// teams, and says which).
export function orgDelete({ api, me }, o, after) {
  if (!isAdmin(me)) return '';
  return button('Delete', async () => {
    if (!window.confirm(`Delete organization ${o.organization_alias || o.organization_id}?`)) return;
    await api.request('DELETE', '/organization/delete', { body: { organization_ids: [o.organization_id] } });
    toast(`Organization ${o.organization_alias || o.organization_id} deleted`);
    after(true);
  }, 'danger');
}
