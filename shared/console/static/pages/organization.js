// The organization page (#/organization?organization_id=): its settings,
// teams and members with their roles and budgets in it. A proxy admin
// edits it; a proxy admin or the organization's org_admin manages its
// members (/organization/info, /update, /member_*: the API decides).
import { el, money } from '../ui.js';
import { isAdmin } from '../roles.js';
import { recordPage, facts, members, editPanel } from '../records.js';
import { organization, orgMember, flat, orgDelete } from '../specs.js';

export default {
  id: 'organization',
  title: 'Organization',
  nav: false,
  async render(root, ctx) {
    const { api, me, params, go } = ctx;
    const id = params.get('organization_id') || '';
    const o = await recordPage(root, 'Organization', id, () => api.get('/organization/info', { organization_id: id }), (x) => x.organization_alias || x.organization_id);
    if (!o) return;
    const f = flat(o);
    root.append(facts(organization, f, ctx), el('div', { class: 'actions' }, orgDelete(ctx, o, () => go('organizations'))));
    const budget = (m) => (m.litellm_budget_table || {}).max_budget;
    root.append(...members(ctx, {
      noun: 'organization',
      id: { organization_id: o.organization_id },
      spec: orgMember,
      rows: o.members,
      manage: isAdmin(me) || (o.members || []).some((m) => m.user_id === me.userID && m.user_role === 'org_admin'),
      add: ['POST', '/organization/member_add'],
      update: ['PATCH', '/organization/member_update'],
      remove: ['DELETE', '/organization/member_delete'],
      test: 'org-',
      role: (m) => m.user_role,
      budget,
      spend: ['Spend', (m) => money(m.spend || 0)],
      shown: ['Budget in organization', (m) => money(budget(m))],
    }));
    const edit = editPanel(ctx, { noun: 'organization', kind: organization, record: f, test: 'edit-organization',
      save: (b) => api.request('PATCH', '/organization/update', { body: { organization_id: o.organization_id, ...b } }) });
    if (edit) root.append(edit);
  },
};
