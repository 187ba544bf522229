// The organizations page (/organization/*: every organization to a proxy
// admin or viewer, a user's own organizations otherwise; proxy admins
// create and delete them).
import { isAdmin } from '../roles.js';
import { listPage, rowActions } from '../records.js';
import { organization, flat, orgDelete } from '../specs.js';

export default listPage({
  id: 'organizations',
  title: 'Organizations',
  visible: (me) => me.master || !!me.userID,
  kind: organization,
  path: '/organization/list',
  flat,
  label: 'Search by name or ID',
  search: ['organization_alias', 'organization_id'],
  empty: 'No organizations.',
  actions: (ctx, o) => (isAdmin(ctx.me) ? rowActions(o.organization_alias || o.organization_id, orgDelete(ctx, o, ctx.reload)) : ''),
  create: {
    noun: 'organization',
    path: '/organization/new',
    test: 'new-organization',
    name: (o) => o.organization_alias || o.organization_id,
    then: ({ go }, o) => go('organization', { organization_id: o.organization_id }),
  },
});
