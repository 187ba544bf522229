// The team page (#/team?team_id=): a team's settings, its members with
// their roles and budgets in the team, and a link to its keys. A proxy
// admin edits the team; a proxy admin or the team's admin manages its
// members (/team/info, /team/update, /team/member_*: the API decides).
import { el, table, link, button, toast, field, form, clear, money, date } from '../ui.js';
import { isAdmin } from '../roles.js';
import { specForm, panel, budgetText, blockedTag, fetched, numeric, rowActions } from './records.js';
import { teamSpec, teamActions } from './teams.js';

// mayManage: a proxy admin or an admin of the team (the API checks).
const mayManage = (me, id) => isAdmin(me) || me.adminTeams.includes(id);

const roleOptions = [['user', 'user'], ['admin', 'admin']];

export default {
  id: 'team',
  title: 'Team',
  nav: false,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    const id = params.get('team_id') || '';
    root.append(el('h1', {}, 'Team ', el('span', { class: 'mono' }, id)));
    const info = await fetched(root, () => api.get('/team/info', { team_id: id }));
    if (!info) return;
    const t = info.team_info;
    clear(root.querySelector('h1')).append('Team ' + (t.team_alias || t.team_id));
    root.append(el('dl', { class: 'facts' },
      fact('Team ID', el('span', { class: 'mono' }, t.team_id)),
      fact('Status', blockedTag(t)),
      t.organization_id ? fact('Organization', link(t.organization_id, 'organization', { organization_id: t.organization_id })) : null,
      fact('Models', (t.models || []).length ? t.models.join(', ') : 'all'),
      fact('Spend', budgetText(t.spend, t.max_budget, t.budget_reset_at)),
      fact('Limits', `${t.rpm_limit ?? '—'} rpm, ${t.tpm_limit ?? '—'} tpm`),
      fact('Keys', link(`${(info.keys || []).length} keys: open the keys page`, 'keys', { team_id: t.team_id })),
      fact('Created', date(t.created_at))));
    root.append(teamActions(ctx, t, (deleted) => (deleted ? go('teams') : reload())));

    root.append(el('h2', {}, 'Members'));
    const budgets = Object.fromEntries((info.team_memberships || []).map((m) => [m.user_id, m]));
    const manage = mayManage(me, t.team_id);
    const editSlot = el('div', { class: 'member-edit' });
    root.append(table([
      { label: 'User', value: (m) => m.user_id, class: 'mono' },
      { label: 'Email', value: (m) => m.user_email },
      { label: 'Role', value: (m) => m.role },
      { label: 'Spend in team', value: (m) => money((budgets[m.user_id] || {}).spend || 0) },
      { label: 'Budget in team', value: (m) => memberBudget(budgets[m.user_id]) },
      { label: 'Actions', value: (m) => (manage ? rowActions(m.user_id,
        button('Edit', () => editMember(editSlot, ctx, t.team_id, m, budgets[m.user_id])),
        button('Remove', async () => {
          if (!window.confirm(`Remove ${m.user_id} from the team?`)) return;
          await api.post('/team/member_delete', { team_id: t.team_id, user_id: m.user_id });
          toast(`${m.user_id} removed`);
          reload();
        }, 'danger')) : '') },
    ], t.members_with_roles, 'No members.'));
    root.append(editSlot);

    if (manage) root.append(panel('Add a member', addMemberForm(ctx, t.team_id)));
    if (isAdmin(me)) {
      root.append(panel('Edit team', specForm({
        spec: teamSpec,
        record: t,
        submit: 'Save team',
        test: 'edit-team',
        onSave: async (body) => {
          await api.post('/team/update', { team_id: t.team_id, ...body });
          toast('Team saved');
          reload();
        },
      })));
    }
  },
};

function fact(k, v) {
  return [el('dt', {}, k), el('dd', {}, v)];
}

function memberBudget(mb) {
  const b = mb && mb.litellm_budget_table;
  if (mb && mb.budget_id) return `budget ${mb.budget_id}`;
  return b && b.max_budget != null ? money(b.max_budget) + (b.budget_duration ? ' / ' + b.budget_duration : '') : '';
}

// withBudget adds what a member form sends of its budget: the amount typed
// (a number, or the text for the API to refuse), null when emptied; budget_id.
function withBudget(body, v, record) {
  const typed = v.max_budget_in_team;
  const was = record && record.litellm_budget_table && record.litellm_budget_table.max_budget;
  if (typed !== '') body.max_budget_in_team = numeric(typed);
  else if (record && was != null) body.max_budget_in_team = null;
  if (v.budget_id) body.budget_id = v.budget_id;
  return body;
}

// addMemberForm adds a user (by ID or email; a new email makes a user) with
// a role and a budget in the team (/team/member_add).
function addMemberForm({ api, me, reload }, teamID) {
  const f = form({
    fields: [
      field({ name: 'user_id', label: 'User ID' }),
      field({ name: 'user_email', label: 'or user email', type: 'email', help: 'A user with this email is made when none has it.' }),
      field({ name: 'role', label: 'Role', options: roleOptions, value: 'user' }),
      field({ name: 'max_budget_in_team', label: 'Budget in the team (USD)', help: 'What this member may spend through the team’s keys; empty: no budget.', attrs: { inputmode: 'decimal' } }),
      isAdmin(me) ? field({ name: 'budget_id', label: 'or a reusable budget ID', help: 'Proxy admins only.' }) : null,
    ],
    submit: 'Add member',
    onSubmit: async (v) => {
      const member = { role: v.role };
      if (v.user_id) member.user_id = v.user_id;
      if (v.user_email) member.user_email = v.user_email;
      try {
        await api.post('/team/member_add', withBudget({ team_id: teamID, member }, v));
      } catch (e) {
        if (e.param === 'member') e.param = v.user_id || !v.user_email ? 'user_id' : 'user_email'; // the member's own fields
        throw e;
      }
      toast(`${v.user_id || v.user_email} added`);
      reload();
    },
  });
  f.dataset.test = 'member-add';
  return f;
}

// editMember shows the form changing a member's role and budget in the
// team (/team/member_update) in slot.
function editMember(slot, { api, reload }, teamID, m, mb) {
  const b = (mb && mb.litellm_budget_table) || {};
  const f = form({
    fields: [
      field({ name: 'role', label: 'Role', options: roleOptions, value: m.role }),
      field({ name: 'max_budget_in_team', label: 'Budget in the team (USD)', value: b.max_budget ?? '', attrs: { inputmode: 'decimal' } }),
    ],
    submit: 'Save member',
    onSubmit: async (v) => {
      const body = { team_id: teamID, user_id: m.user_id };
      if (v.role !== m.role) body.role = v.role;
      await api.post('/team/member_update', withBudget(body, v, mb));
      toast(`${m.user_id} saved`);
      reload();
    },
  });
  f.dataset.test = 'member-edit';
  clear(slot).append(panel('Edit member ' + m.user_id, f, button('Cancel', () => clear(slot))));
  f.querySelector('select').focus();
}
