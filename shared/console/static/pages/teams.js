// The teams page: every team a proxy admin (or viewer) may see, a user's
// own teams otherwise (/team/list decides); create, block, delete.
import { el, link, button, toast, money } from '../ui.js';
import { isAdmin } from '../roles.js';
import { budgetSpec, specForm, panel, blockedTag, wholeList, fetched, rowActions } from './records.js';

// teamSpec is a team's form: /team/new and /team/update's fields.
export const teamSpec = [
  { name: 'team_alias', label: 'Name (team_alias)', kind: 'str' },
  { name: 'team_id', label: 'Team ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.' },
  { name: 'organization_id', label: 'Organization ID', kind: 'str', help: 'Optional: the organization the team belongs to.' },
  { name: 'models', label: 'Models', kind: 'list', help: 'Model groups the team may use, comma-separated; empty: all.' },
  ...budgetSpec,
  { name: 'metadata', label: 'Metadata (JSON object)', kind: 'json' },
];

export default {
  id: 'teams',
  title: 'Teams',
  visible: (me) => me.master || !!me.userID,
  async render(root, ctx) {
    const { api, me, go, reload } = ctx;
    root.append(el('h1', {}, 'Teams'));
    const list = await fetched(root, () => api.get('/team/list'));
    if (list) {
      wholeList(root, ctx, {
        rows: list,
        label: 'Search by name or ID',
        search: ['team_alias', 'team_id'],
        empty: 'No teams.',
        columns: [
          { label: 'Name', value: (t) => link(t.team_alias || t.team_id, 'team', { team_id: t.team_id }) },
          { label: 'Team ID', value: (t) => t.team_id, class: 'mono' },
          { label: 'Members', value: (t) => String((t.members_with_roles || []).length) },
          { label: 'Spend', value: (t) => money(t.spend || 0) + (t.max_budget != null ? ' of ' + money(t.max_budget) : '') },
          { label: 'Status', value: blockedTag },
          { label: 'Actions', value: (t) => teamActions(ctx, t, reload) },
        ],
      });
    }
    if (isAdmin(me)) {
      root.append(panel('New team', specForm({
        spec: teamSpec,
        submit: 'Create team',
        test: 'new-team',
        onSave: async (body) => {
          const t = await api.post('/team/new', body);
          toast(`Team ${t.team_alias || t.team_id} created`);
          go('team', { team_id: t.team_id });
        },
      })));
    }
  },
};

// teamActions are a team's buttons for a proxy admin: block or unblock,
// delete (with its keys, as the API does).
export function teamActions({ api, me }, t, after) {
  if (!isAdmin(me)) return '';
  return rowActions(t.team_alias || t.team_id,
    button(t.blocked ? 'Unblock' : 'Block', async () => {
      await api.post(t.blocked ? '/team/unblock' : '/team/block', { team_id: t.team_id });
      toast(`Team ${t.team_alias || t.team_id} ${t.blocked ? 'unblocked' : 'blocked'}`);
      after();
    }),
    button('Delete', async () => {
      if (!window.confirm(`Delete team ${t.team_alias || t.team_id} and its keys?`)) return;
      await api.post('/team/delete', { team_ids: [t.team_id] });
      toast(`Team ${t.team_alias || t.team_id} deleted`);
      after(true);
    }, 'danger'));
}
