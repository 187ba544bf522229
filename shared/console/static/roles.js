// roles.js: what the console offers each role. It only hides what the
// admin API would refuse anyway: the API checks every call (a typed URL
// gets the API's 403, shown on the page).

export const isAdmin = (me) => me.role === 'proxy_admin';
export const isViewer = (me) => me.role === 'proxy_admin' || me.role === 'proxy_admin_viewer';
export const isTeamAdmin = (me) => me.adminTeams.length > 0;
// canWriteKeys: proxy admins, internal users (their own keys) and team
// admins (their teams' keys); viewers read only.
export const canWriteKeys = (me) => isAdmin(me) || me.role === 'internal_user' || isTeamAdmin(me);

export function roleNote(me) {
  switch (me.role) {
    case 'proxy_admin':
      return 'A proxy admin sees and changes everything.';
    case 'proxy_admin_viewer':
      return 'A proxy admin viewer sees everything and changes nothing.';
    case 'internal_user':
      return isTeamAdmin(me) ? 'You see and manage your own keys and the keys of the teams you administer.' : 'You see and manage your own keys and spend.';
    case 'internal_user_viewer':
      return 'You see your own keys and spend.';
  }
  return 'This key belongs to no user: it may read only itself.';
}
