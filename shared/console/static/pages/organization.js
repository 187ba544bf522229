// The organization page (#/organization?organization_id=): its settings,
// teams and members with their roles and budgets in it. A proxy admin
// edits it; a proxy admin or the organization's org_admin manages its
// members (/organization/info, /update, /member_*: the API decides).
import { el, table, link, button, toast, field, form, clear, money, date } from '../ui.js';
import { isAdmin } from '../roles.js';
import { specForm, panel, budgetText, blockedTag, fetched, numeric, rowActions } from './records.js';
import { orgSpec, flat, orgDelete } from './organizations.js';

const roleOptions = [['internal_user', 'internal_user'], ['internal_user_viewer', 'internal_user_viewer'], ['org_admin', 'org_admin']];

export default {
  id: 'organization',
  title: 'Organization',
  nav: false,
  async render(root, ctx) {
    const { api, me, params, go, reload } = ctx;
    const id = params.get('organization_id') || '';
    root.append(el('h1', {}, 'Organization ', el('span', { class: 'mono' }, id)));
    const o = await fetched(root, () => api.get('/organization/info', { organization_id: id }));
    if (!o) return;
    const f = flat(o);
    clear(root.querySelector('h1')).append('Organization ' + (o.organization_alias || o.organization_id));
    const dl = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
    root.append(el('dl', { class: 'facts' },
      dl('Organization ID', el('span', { class: 'mono' }, o.organization_id)),
      dl('Status', blockedTag(o)),
      dl('Models', (o.models || []).length ? o.models.join(', ') : 'all'),
      dl('Spend', budgetText(o.spend, f.max_budget, f.budget_reset_at || (o.litellm_budget_table || {}).budget_reset_at)),
      dl('Limits', `${f.rpm_limit ?? '—'} rpm, ${f.tpm_limit ?? '—'} tpm`),
      dl('Teams', (o.teams || []).length ? o.teams.map((t, i) => [i ? ', ' : '', link(t.team_alias || t.team_id, 'team', { team_id: t.team_id })]) : 'none'),
      dl('Created', date(o.created_at))));
    root.append(el('div', { class: 'actions' }, orgDelete(ctx, o, () => go('organizations'))));

    root.append(el('h2', {}, 'Members'));
    const manage = isAdmin(me) || (o.members || []).some((m) => m.user_id === me.userID && m.user_role === 'org_admin');
    const slot = el('div', {});
    root.append(table([
      { label: 'User', value: (m) => m.user_id, class: 'mono' },
      { label: 'Email', value: (m) => m.user_email },
      { label: 'Role', value: (m) => m.user_role },
      { label: 'Spend', value: (m) => money(m.spend || 0) },
      { label: 'Budget in organization', value: (m) => money((m.litellm_budget_table || {}).max_budget) },
      { label: 'Actions', value: (m) => (manage ? rowActions(m.user_id,
        button('Edit', () => editMember(slot, ctx, o.organization_id, m)),
        button('Remove', async () => {
          if (!window.confirm(`Remove ${m.user_id} from the organization?`)) return;
          await api.request('DELETE', '/organization/member_delete', { body: { organization_id: o.organization_id, user_id: m.user_id } });
          toast(`${m.user_id} removed`);
          reload();
        }, 'danger')) : '') },
    ], o.members, 'No members.'));
    root.append(slot);
    if (manage) root.append(panel('Add a member', addMember(ctx, o.organization_id)));
    if (isAdmin(me)) {
      root.append(panel('Edit organization', specForm({
        spec: orgSpec,
        record: f,
        submit: 'Save organization',
        test: 'edit-organization',
        onSave: async (body) => {
          await api.request('PATCH', '/organization/update', { body: { organization_id: o.organization_id, ...body } });
          toast('Organization saved');
          reload();
        },
      })));
    }
  },
};

const budgetField = (value) => field({ name: 'max_budget_in_organization', label: 'Budget in the organization (USD)', value: value ?? '', attrs: { inputmode: 'decimal' } });

function addMember({ api, reload }, orgID) {
  const f = form({
    fields: [
      field({ name: 'user_id', label: 'User ID' }),
      field({ name: 'user_email', label: 'or user email', type: 'email', help: 'A user with this email is made when none has it.' }),
      field({ name: 'role', label: 'Role', options: roleOptions, value: 'internal_user' }),
      budgetField(),
    ],
    submit: 'Add member',
    onSubmit: async (v) => {
      const member = { role: v.role };
      if (v.user_id) member.user_id = v.user_id;
      if (v.user_email) member.user_email = v.user_email;
      const body = { organization_id: orgID, member };
      if (v.max_budget_in_organization !== '') body.max_budget_in_organization = numeric(v.max_budget_in_organization);
      try {
        await api.post('/organization/member_add', body);
      } catch (e) {
        if (e.param === 'member') e.param = v.user_id || !v.user_email ? 'user_id' : 'user_email';
        throw e;
      }
      toast(`${v.user_id || v.user_email} added`);
      reload();
    },
  });
  f.dataset.test = 'org-member-add';
  return f;
}

function editMember(slot, { api, reload }, orgID, m) {
  const was = (m.litellm_budget_table || {}).max_budget;
  const f = form({
    fields: [field({ name: 'role', label: 'Role', options: roleOptions, value: m.user_role }), budgetField(was)],
    submit: 'Save member',
    onSubmit: async (v) => {
      const body = { organization_id: orgID, user_id: m.user_id };
      if (v.role !== m.user_role) body.role = v.role;
      const typed = v.max_budget_in_organization;
      if (typed !== '') body.max_budget_in_organization = numeric(typed);
      else if (was != null) body.max_budget_in_organization = null;
      await api.request('PATCH', '/organization/member_update', { body });
      toast(`${m.user_id} saved`);
      reload();
    },
  });
  f.dataset.test = 'org-member-edit';
  clear(slot).append(panel('Edit member ' + m.user_id, f, button('Cancel', () => clear(slot))));
  f.querySelector('select').focus();
}
