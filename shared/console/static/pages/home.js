// The home page: who is signed in and what it may do.
import { el, link, money } from '../ui.js';
import { roleNote } from '../roles.js';

export default {
  id: 'home',
  title: 'Home',
  async render(root, { me, api }) {
    root.append(el('h1', {}, 'Sluice console'));
    const rows = [
      ['Signed in as', me.master ? 'the master key' : me.userID || 'a key that belongs to no user'],
      ['Role', me.role || 'none'],
    ];
    if (me.teams.length) rows.push(['Teams', me.teams.join(', ')]);
    if (me.adminTeams.length) rows.push(['Admin of', me.adminTeams.join(', ')]);
    if (!me.master) {
      try {
        const k = await api.get('/key/info');
        rows.push(['Key', k.info.key_alias || k.info.key_name || k.key]);
        rows.push(['Key spend', money(k.info.spend) + (k.info.max_budget != null ? ' of ' + money(k.info.max_budget) : '')]);
      } catch {
        // shown by the rows above; the key's own details are a bonus
      }
    }
    root.append(el('dl', { class: 'facts' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])));
    root.append(el('p', {}, roleNote(me)), el('p', {}, link('Manage keys', 'keys')));
  },
};
