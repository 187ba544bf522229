// api.js: the admin API, called with the signed-in key.
//
// The key lives in sessionStorage only: it is gone when the tab closes, no
// cookie carries it (so no other site can make the browser send it), and it
// is sent only as an Authorization header to this origin.

const STORAGE = 'sluice.console.key';

export function getKey() {
  return sessionStorage.getItem(STORAGE) || '';
}

export function setKey(key) {
  sessionStorage.setItem(STORAGE, key);
}

export function clearKey() {
  sessionStorage.removeItem(STORAGE);
}

// APIError is an answer of the admin API that is not 2xx: its status and
// the OpenAI-style error object ({message, type, param, code}).
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && typeof body === 'object' && body.error) || {};
    let msg = typeof e === 'string' ? e : e.message;
    if (!msg && body && typeof body.detail === 'string') msg = body.detail;
    super(msg || `HTTP ${status}`);
    this.status = status;
    this.type = e.type || '';
    this.param = e.param || '';
    this.code = e.code || '';
  }
}

// request calls the admin API: method, path (e.g. '/key/list'), query (an
// object; empty values are left out) and body (sent as JSON). It returns
// the parsed JSON answer or throws an APIError (a network failure too, as
// status 0). A 401 also fires 'sluice:unauthorized' on window, so the app
// can send the person back to sign in.
export async function request(method, path, { query, body, key } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
  }
  const headers = { Accept: 'application/json' };
  const k = key ?? getKey();
  if (k) headers.Authorization = 'Bearer ' + k;
  const init = { method, headers, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (err) {
    throw new APIError(0, { error: { message: 'The admin API could not be reached: ' + err.message } });
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: { message: text.slice(0, 300) } };
    }
  }
  if (!res.ok) {
    const e = new APIError(res.status, data);
    if (res.status === 401 && key === undefined) window.dispatchEvent(new CustomEvent('sluice:unauthorized', { detail: e }));
    throw e;
  }
  return data;
}

export const get = (path, query, opts) => request('GET', path, { ...opts, query });
export const post = (path, body, opts) => request('POST', path, { ...opts, body });

// whoami tells who a key is and what role it has, from LiteLLM's own
// routes (the admin API adds none for the console):
//  - GET /key/info without ?key= describes the calling virtual key;
//  - the master key is no virtual key: the same call answers 400 with
//    param "key" once authenticated (a wrong key answers 401), and the
//    master key is the only credential that authenticates without being a
//    virtual key;
//  - GET /user/info without ?user_id= gives the key's user: its role and
//    its teams (a team admin sees its teams' keys).
export async function whoami(key) {
  let info;
  try {
    info = await get('/key/info', undefined, { key });
  } catch (e) {
    if (e.status === 400 && e.param === 'key') {
      return { master: true, role: 'proxy_admin', userID: '', keyAlias: 'master key', teams: [], adminTeams: [] };
    }
    throw e;
  }
  const k = info.info || {};
  const me = {
    master: false,
    role: '',
    userID: k.user_id || '',
    teamID: k.team_id || '',
    keyAlias: k.key_alias || k.key_name || '',
    teams: [],
    adminTeams: [],
  };
  if (me.userID) {
    try {
      const u = await get('/user/info', undefined, { key });
      me.role = (u.user_info && u.user_info.user_role) || '';
      me.email = (u.user_info && u.user_info.user_email) || '';
      for (const t of u.teams || []) {
        me.teams.push(t.team_id);
        if ((t.members_with_roles || []).some((m) => m.user_id === me.userID && m.role === 'admin')) me.adminTeams.push(t.team_id);
      }
    } catch (e) {
      if (e.status === 401) throw e;
      // A user that cannot read itself (deleted since): a key with no role.
    }
  }
  return me;
}
