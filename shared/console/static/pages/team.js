// The team page (#/team?team_id=): a team's settings, its members with
// their roles and budgets in the team, and a link to its keys. A proxy
// admin edits the team; a proxy admin or the team's admin manages its
// members (/team/info, /team/update, /team/member_*: the API decides).
import { money } from '../ui.js';
import { isAdmin } from '../roles.js';
import { recordPage, facts, members, editPanel } from '../records.js';
import { team, teamMember, teamActions } from '../specs.js';

export default {
  id: 'team',
  title: 'Team',
  nav: false,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    const id = params.get('team_id') || '';
    const info = await recordPage(root, 'Team', id, () => api.get('/team/info', { team_id: id }), (i) => i.team_info.team_alias || i.team_info.team_id);
    if (!info) return;
    const t = info.team_info;
    root.append(facts(team, { ...t, keys: info.keys }, ctx), teamActions(ctx, t, (deleted) => (deleted ? go('teams') : reload())));
    const inTeam = Object.fromEntries((info.team_memberships || []).map((m) => [m.user_id, m]));
    const of = (m) => inTeam[m.user_id] || {};
    root.append(...members(ctx, {
      noun: 'team',
      id: { team_id: t.team_id },
      spec: teamMember,
      rows: t.members_with_roles,
      manage: isAdmin(me) || me.adminTeams.includes(t.team_id),
      add: ['POST', '/team/member_add'],
      update: ['POST', '/team/member_update'],
      remove: ['POST', '/team/member_delete'],
      test: '',
      role: (m) => m.role,
      budget: (m) => (of(m).litellm_budget_table || {}).max_budget,
      spend: ['Spend in team', (m) => money(of(m).spend || 0)],
      shown: ['Budget in team', (m) => memberBudget(of(m))],
    }));
    const edit = editPanel(ctx, { noun: 'team', kind: team, record: t, test: 'edit-team', save: (b) => api.post('/team/update', { team_id: t.team_id, ...b }) });
    if (edit) root.append(edit);
  },
};

function memberBudget(mb) {
  const b = mb.litellm_budget_table;
  if (mb.budget_id) return `budget ${mb.budget_id}`;
  return b && b.max_budget != null ? money(b.max_budget) + (b.budget_duration ? ' / ' + b.budget_duration : '') : '';
}
