// The teams page: every team a proxy admin (or viewer) may see, a user's
// own teams otherwise (/team/list decides); create, block, delete.
import { listPage } from '../records.js';
import { team, teamActions } from '../specs.js';

export default listPage({
  id: 'teams',
  title: 'Teams',
  visible: (me) => me.master || !!me.userID,
  kind: team,
  path: '/team/list',
  label: 'Search by name or ID',
  search: ['team_alias', 'team_id'],
  empty: 'No teams.',
  actions: (ctx, t) => teamActions(ctx, t, ctx.reload),
  create: { noun: 'team', path: '/team/new', test: 'new-team', name: (t) => t.team_alias || t.team_id, then: ({ go }, t) => go('team', { team_id: t.team_id }) },
});
