// app.js: sign-in, navigation and the hash router. A page is a module
// under pages/ listed in pages/index.js (PAGES.md is the contract).

import * as api from './api.js';
import * as ui from './ui.js';
import pages from './pages/index.js';

const { el, clear } = ui;
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');

let me = null; // who is signed in (api.whoami), null when nobody is

// route parses the fragment: "#/keys?team_id=t1" → {id: 'keys', params}.
function route() {
  const h = window.location.hash.replace(/^#\/?/, '');
  const [id, q] = h.split('?');
  return { id: id || 'home', params: new URLSearchParams(q || '') };
}

// go changes the fragment (the hashchange renders the page).
function go(id, params) {
  const target = ui.href(id, params);
  if (window.location.hash === target) render();
  else window.location.hash = target;
}

function signOut(message) {
  api.clearKey();
  me = null;
  renderSignIn(message);
}

function renderNav() {
  clear(nav);
  clear(who);
  if (!me) return;
  const current = route().id;
  const items = pages.filter((p) => p.nav !== false && (!p.visible || p.visible(me)));
  nav.appendChild(el('ul', {}, items.map((p) =>
    el('li', {}, el('a', { href: '#/' + p.id, 'aria-current': p.id === current ? 'page' : false }, p.title)))));
  const name = me.master ? 'master key' : [me.userID || 'key without a user', me.keyAlias ? `(${me.keyAlias})` : ''].join(' ');
  who.append(el('span', { class: 'name' }, name), ' ', el('span', { class: 'role' }, me.role || 'no role'), ' ',
    el('button', { type: 'button', class: 'link', onclick: () => signOut('Signed out.') }, 'Sign out'));
}

function renderSignIn(message) {
  renderNav();
  const keyField = ui.field({ name: 'key', label: 'Master key or virtual key', type: 'password', autocomplete: 'off', required: true,
    help: 'Kept in this tab only (sessionStorage) and sent only to this site’s admin API.' });
  const f = ui.form({
    fields: [keyField],
    submit: 'Sign in',
    onSubmit: async (v) => {
      if (!v.key) throw ui.fieldError('key', 'Enter a key.');
      let who;
      try {
        who = await api.whoami(v.key);
      } catch (e) {
        if (e.status === 401 || e.status === 403) e.param = 'key';
        throw e;
      }
      api.setKey(v.key);
      me = who;
      render();
    },
  });
  clear(main).append(
    el('section', { class: 'signin' },
      el('h1', {}, 'Sign in'),
      message ? el('p', { class: 'notice' }, message) : null,
      f));
  f.querySelector('input').focus();
}

// render shows the route's page; main's aria-busy is set meanwhile, and
// data-rendered holds the fragment rendered last (tests wait on it).
async function render() {
  main.setAttribute('aria-busy', 'true');
  try {
    await renderRoute();
  } finally {
    main.removeAttribute('aria-busy');
    main.dataset.rendered = window.location.hash;
  }
}

async function renderRoute() {
  if (!me) {
    if (!api.getKey()) return renderSignIn();
    try {
      me = await api.whoami(api.getKey());
    } catch (e) {
      return signOut(e.status === 401 ? 'Your key is no longer valid: ' + e.message : e.message);
    }
  }
  const r = route();
  const page = pages.find((p) => p.id === r.id);
  renderNav();
  clear(main);
  if (!page) {
    main.append(el('h1', {}, 'Not found'), el('p', {}, 'No page ' + r.id + '. '), ui.link('Home', 'home'));
    return;
  }
  document.title = page.title + ' · Sluice console';
  const root = el('section', { class: 'page page-' + page.id });
  main.append(root);
  const ctx = { me, params: r.params, api, ui, go, reload: () => render() };
  try {
    await page.render(root, ctx);
  } catch (e) {
    clear(root).append(el('h1', {}, page.title), ui.errorBox(e));
  }
  main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => render());
// An error no page caught still says something.
window.addEventListener('unhandledrejection', (ev) => ui.toast((ev.reason && ev.reason.message) || String(ev.reason), 'error'));
window.addEventListener('sluice:unauthorized', (ev) => signOut('Signed out: ' + ev.detail.message));
render();
