// specs.js: one spec per record kind (keys, teams, users, end users,
// organizations, budgets, members), read by every page showing that kind:
// its fields (the admin API's body fields: the form, form.js's rules) and
// display-only entries, the list's columns and the detail page's facts by
// name (records.js renders them). A page reads a kind here, never in
// another page; the kinds' row actions live here too.
import { el, link, button, toast, money, date } from './ui.js';
import { isAdmin } from './roles.js';
import { budgetText, blockedTag, rowActions } from './records.js';

const mono = (v) => el('span', { class: 'mono' }, v);
const links = (teams) => ((teams || []).length ? teams.map((t, i) => [i ? ', ' : '', link(t.team_alias || t.team_id, 'team', { team_id: t.team_id })]) : 'none');
const keysLink = (id) => (r) => link(`${(r.keys || []).length} keys: open the keys page`, 'keys', { [id]: r[id] });
const count = (name) => (r) => String((r[name] || []).length);

// What most kinds show alike.
const models = (help) => ({ name: 'models', label: 'Models', kind: 'list', help, show: (r) => ((r.models || []).length ? r.models.join(', ') : 'all') });
const spend = { name: 'spend', label: 'Spend', show: (r) => budgetText(r.spend, r.max_budget, r.budget_reset_at) };
const status = { name: 'blocked', label: 'Status', show: blockedTag };
const limits = { name: 'limits', label: 'Limits', show: (r) => `${r.rpm_limit ?? '—'} rpm, ${r.tpm_limit ?? '—'} tpm` };
const created = { name: 'created_at', label: 'Created', show: (r) => date(r.created_at) };
const metadata = { name: 'metadata', label: 'Metadata (JSON object)', kind: 'json' };

// The budget and limit fields most records share.
const budgetFields = [
  { name: 'max_budget', label: 'Max budget (USD)', title: 'Max budget', kind: 'num', help: 'Requests are refused once spend reaches it; empty: no budget.', show: (r) => money(r.max_budget) },
  { name: 'soft_budget', label: 'Soft budget (USD)', title: 'Soft budget', kind: 'num', help: 'Alerts only.', show: (r) => money(r.soft_budget) },
  { name: 'budget_duration', label: 'Budget period', title: 'Period', kind: 'str', help: 'When spend resets: 30s, 1h, 1d, 7d, 30d, 1mo; empty: never.' },
  { name: 'rpm_limit', label: 'Requests per minute', kind: 'num' },
  { name: 'tpm_limit', label: 'Tokens per minute', kind: 'num' },
];

// flat is a record whose budget and limits the API nests in its
// litellm_budget_table (end users, organizations) as its forms and lists
// show it: those fields beside its own.
export function flat(r) {
  const b = r.litellm_budget_table || {};
  const out = { ...r, budget_id: r.budget_id ?? null, budget_reset_at: r.budget_reset_at ?? b.budget_reset_at };
  for (const f of budgetFields) out[f.name] = b[f.name];
  return out;
}

const expired = (k) => k.expires && new Date(k.expires) < new Date();

// teamName is a team's alias where the page knows it (ctx.teamNames, by
// id), else its id: teams show by alias, as LiteLLM's UI shows them.
export const teamName = (ctx, id) => (ctx && ctx.teamNames && ctx.teamNames.get(id)) || id;

export const key = {
  fields: [
    { name: 'key_alias', label: 'Alias', kind: 'str', help: 'A unique name for the key.',
      cell: (k) => el('span', {}, k.key_alias || '', ' ', el('span', { class: 'mono help' }, k.key_name || '')) },
    { name: 'status', label: 'Status', show: (k) => (k.blocked ? el('span', { class: 'tag bad' }, 'blocked') : expired(k) ? el('span', { class: 'tag bad' }, 'expired') : el('span', { class: 'tag' }, 'active')) },
    { name: 'team_id', label: 'Team', kind: 'str', group: 'Owner',
      // a picker of the teams by alias (LiteLLM's UI), when the page could list them
      options: (c) => c.teams && [['', 'No team'], ...c.teams.map((t) => [t.team_id, t.team_alias || t.team_id])],
      cell: (k, ctx) => k.team_id && link(teamName(ctx, k.team_id), 'team', { team_id: k.team_id }) },
    { name: 'user_id', label: 'User id', title: 'User', kind: 'str', group: 'Owner', when: (me) => isAdmin(me) || me.adminTeams.length > 0, help: (k, me) => (me.userID ? 'Empty: yours.' : '') },
    { ...models('Model groups the key may call, comma separated. Empty: all.'), placeholder: null,
      options: (c) => c.models && c.models.map((m) => [m, m]),
      pickHelp: 'Model groups the key may call (its team’s, when it names some). None selected: all.' },
    { name: 'max_budget', label: 'Max budget (USD)', kind: 'num', group: 'Limits' },
    { name: 'budget_duration', label: 'Budget resets every', kind: 'str', group: 'Limits', placeholder: '30d', help: 'e.g. 1d, 7d, 30d, 1mo. Empty: never.' },
    { name: 'rpm_limit', label: 'Requests per minute', kind: 'num', group: 'Limits' },
    { name: 'tpm_limit', label: 'Tokens per minute', kind: 'num', group: 'Limits' },
    { name: 'duration', label: (k) => (k ? 'Expires in (from now)' : 'Expires in'), kind: 'str', placeholder: '30d', get: () => null,
      help: (k) => (k && k.expires ? 'Now expires ' + date(k.expires) + '. ' : '') + 'e.g. 1h, 30d, 1y. Empty: ' + (k ? 'unchanged.' : 'never.') },
    { ...metadata, placeholder: null },
    { name: 'spend', label: 'Spend', show: (k) => money(k.spend) + (k.max_budget != null ? ' / ' + money(k.max_budget) : '') },
    { name: 'limits', label: 'Limits', show: (k) => [k.rpm_limit != null ? k.rpm_limit + ' rpm' : '', k.tpm_limit != null ? k.tpm_limit + ' tpm' : ''].filter(Boolean).join(', ') },
    { name: 'expires', label: 'Expires', show: (k) => (k.expires ? date(k.expires) : 'never') },
  ],
  columns: ['key_alias', 'status', 'user_id', 'team_id', 'models', 'spend', 'limits', 'expires'],
};

export const team = {
  fields: [
    { name: 'team_alias', label: 'Name (team_alias)', title: 'Name', kind: 'str', cell: (t) => link(t.team_alias || t.team_id, 'team', { team_id: t.team_id }) },
    { name: 'team_id', label: 'Team ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.', class: 'mono', show: (t) => mono(t.team_id) },
    { name: 'organization_id', label: 'Organization ID', title: 'Organization', kind: 'str', help: 'Optional: the organization the team belongs to.', optional: true,
      show: (t) => t.organization_id && link(t.organization_id, 'organization', { organization_id: t.organization_id }) },
    models('Model groups the team may use, comma-separated; empty: all.'),
    ...budgetFields,
    metadata,
    { name: 'members_with_roles', label: 'Members', show: count('members_with_roles') },
    spend, status, limits, created,
    { name: 'keys', label: 'Keys', show: keysLink('team_id') },
  ],
  columns: ['team_alias', 'team_id', 'members_with_roles', 'spend', 'blocked'],
  facts: ['team_id', 'blocked', 'organization_id', 'models', 'spend', 'limits', 'keys', 'created_at'],
};

export const userRoles = [
  ['internal_user', 'internal_user'],
  ['internal_user_viewer', 'internal_user_viewer'],
  ['proxy_admin', 'proxy_admin'],
  ['proxy_admin_viewer', 'proxy_admin_viewer'],
];

export const user = {
  fields: [
    { name: 'user_id', label: 'User ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.', class: 'mono',
      show: (u) => mono(u.user_id), cell: (u) => link(u.user_id, 'user', { user_id: u.user_id }) },
    { name: 'user_email', label: 'Email', kind: 'str', type: 'email' },
    { name: 'user_alias', label: 'Name (user_alias)', title: 'Name', kind: 'str' },
    { name: 'user_role', label: 'Role', kind: 'select', options: userRoles, default: 'internal_user' },
    models('Model groups the user may use, comma-separated; empty: all.'),
    ...budgetFields,
    metadata,
    { name: 'auto_create_key', label: 'Create a key for the user', kind: 'bool', create: true },
    { name: 'key_alias', label: 'Its key alias', kind: 'str', create: true },
    { name: 'teams', label: 'Teams', cell: count('teams'), show: (u) => links(u.teams) },
    spend, created,
    { name: 'keys', label: 'Keys', show: keysLink('user_id') },
  ],
  columns: ['user_id', 'user_email', 'user_alias', 'user_role', 'teams', 'spend', 'created_at'],
  facts: ['user_id', 'user_email', 'user_alias', 'user_role', 'models', 'spend', 'teams', 'keys', 'created_at'],
};

export const customer = {
  fields: [
    { name: 'user_id', label: 'End user ID', title: 'End user', kind: 'str', create: true, required: true, help: 'What requests send as "user".', class: 'mono' },
    { name: 'alias', label: 'Name (alias)', title: 'Name', kind: 'str' },
    { name: 'allowed_model_region', label: 'Allowed model region', title: 'Region', kind: 'select', options: [['', 'any'], ['eu', 'eu'], ['us', 'us']],
      help: 'Requests of this end user go only to deployments in this region.', show: (e) => e.allowed_model_region || 'any' },
    ...budgetFields,
    { name: 'budget_id', label: 'or a reusable budget ID', kind: 'str', help: 'Replaces the budget and limits above.' },
    spend, status,
  ],
  columns: ['user_id', 'alias', 'allowed_model_region', 'spend', 'blocked'],
};

export const organization = {
  fields: [
    { name: 'organization_alias', label: 'Name (organization_alias)', title: 'Name', kind: 'str',
      cell: (o) => link(o.organization_alias || o.organization_id, 'organization', { organization_id: o.organization_id }) },
    { name: 'organization_id', label: 'Organization ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.', class: 'mono', show: (o) => mono(o.organization_id) },
    models('Model groups its teams may use, comma-separated; empty: all.'),
    ...budgetFields,
    metadata,
    { name: 'teams', label: 'Teams', cell: count('teams'), show: (o) => links(o.teams) },
    { name: 'members', label: 'Members', show: count('members') },
    spend, status, limits, created,
  ],
  columns: ['organization_alias', 'organization_id', 'teams', 'members', 'spend', 'blocked'],
  facts: ['organization_id', 'blocked', 'models', 'spend', 'limits', 'teams', 'created_at'],
};

export const budget = {
  fields: [
    { name: 'budget_id', label: 'Budget ID', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.', class: 'mono' },
    ...budgetFields,
    { name: 'max_parallel_requests', label: 'Parallel requests', kind: 'num' },
    { name: 'model_max_budget', label: 'Per-model budgets (JSON)', kind: 'json', placeholder: '{"gpt-4o": {"max_budget": 10, "budget_duration": "1d"}}' },
    { name: 'budget_reset_at', label: 'Resets', show: (b) => date(b.budget_reset_at) },
    { name: 'limits', label: 'Limits', show: (b) => `${b.rpm_limit ?? '—'} rpm, ${b.tpm_limit ?? '—'} tpm, ${b.max_parallel_requests ?? '—'} parallel` },
  ],
  columns: ['budget_id', 'max_budget', 'soft_budget', 'budget_duration', 'budget_reset_at', 'limits'],
};

// member is the spec of a member of a team or an organization (what
// /team/member_add and /organization/member_add take, and their
// member_update): budget names its budget field in the group.
function member(budget, label, roles, role, more) {
  return {
    budget,
    fields: [
      { name: 'user_id', label: 'User ID', kind: 'str', create: true },
      { name: 'user_email', label: 'or user email', kind: 'str', type: 'email', create: true, help: 'A user with this email is made when none has it.' },
      { name: 'role', label: 'Role', kind: 'select', options: roles.map((r) => [r, r]), default: role },
      { name: budget, label, kind: 'num', ...more },
    ],
  };
}

export const teamMember = member('max_budget_in_team', 'Budget in the team (USD)', ['user', 'admin'], 'user',
  { help: (m) => (m ? undefined : 'What this member may spend through the team’s keys; empty: no budget.') });
teamMember.fields.push({ name: 'budget_id', label: 'or a reusable budget ID', kind: 'str', create: true, help: 'Proxy admins only.', when: isAdmin });

export const orgMember = member('max_budget_in_organization', 'Budget in the organization (USD)', ['internal_user', 'internal_user_viewer', 'org_admin'], 'internal_user');

// teamActions are a team's buttons for a proxy admin: block or unblock,
// delete (with its keys, as the API does); after(deleted) runs after one.
export function teamActions({ api, me }, t, after) {
  if (!isAdmin(me)) return '';
  const name = t.team_alias || t.team_id;
  return rowActions(name,
    button(t.blocked ? 'Unblock' : 'Block', async () => {
      await api.post(t.blocked ? '/team/unblock' : '/team/block', { team_id: t.team_id });
      toast(`Team ${name} ${t.blocked ? 'unblocked' : 'blocked'}`);
      after();
    }),
    button('Delete', async () => {
      if (!window.confirm(`Delete team ${name} and its keys?`)) return;
      await api.post('/team/delete', { team_ids: [t.team_id] });
      toast(`Team ${name} deleted`);
      after(true);
    }, 'danger'));
}

// userDelete deletes a user with its keys (/user/delete).
export function userDelete(api, u, after) {
  return button('Delete', async () => {
    if (!window.confirm(`Delete user ${u.user_id} and its keys?`)) return;
    await api.post('/user/delete', { user_ids: [u.user_id] });
    toast(`User ${u.user_id} deleted`);
    after();
  }, 'danger');
}

// orgDelete deletes an organization (the API refuses one that still has
// teams, and says which).
export function orgDelete({ api, me }, o, after) {
  if (!isAdmin(me)) return '';
  const name = o.organization_alias || o.organization_id;
  return button('Delete', async () => {
    if (!window.confirm(`Delete organization ${name}?`)) return;
    await api.request('DELETE', '/organization/delete', { body: { organization_ids: [o.organization_id] } });
    toast(`Organization ${name} deleted`);
    after(true);
  }, 'danger');
}

// A deployment (/model/info's entries; /model/new's and /model/update's
// body): model_name, litellm_params and model_info, named by path. The
// api_key is written only: /model/info redacts it, and an edit form never
// shows it (empty: the stored key stays).
const perMillion = (v) => (v === null || v === undefined ? '' : '$' + (Number(v) * 1e6).toFixed(Number(v) * 1e6 < 1 ? 3 : 2) + ' / 1M');
const price = (k) => (d) => perMillion((d.model_info || {})[k] ?? (d.litellm_params || {})[k]);

// stored: a deployment added through the API (LiteLLM's db_model mark),
// not one of the config's.
export const stored = (d) => !!(d.model_info && d.model_info.db_model === true);

export const model = {
  fields: [
    { name: 'model_info.id', label: 'Deployment ID', title: 'Deployment', kind: 'str', create: true, help: 'Optional: a UUID is made when empty.', class: 'mono' },
    { name: 'model_name', label: 'Model group (model_name)', kind: 'str', required: true, help: 'The name requests call.' },
    { name: 'provider', label: 'Provider', show: (d) => (d.model_info && d.model_info.litellm_provider) || ((d.litellm_params || {}).model || '').split('/').slice(0, -1).join('/') },
    { name: 'litellm_params.model', label: 'Provider model', title: 'Model', kind: 'str', required: true, placeholder: 'openai/gpt-4o-mini', class: 'mono',
      help: 'provider/model, as in the config’s litellm_params.model.' },
    { name: 'litellm_params.api_key', label: 'API key', kind: 'str', type: 'password', autocomplete: 'new-password', get: () => null,
      help: (d) => (d ? 'Empty: the stored key stays. A key typed here replaces it and is never shown again.' : 'Stored encrypted, never shown again. Or os.environ/NAME.') },
    { name: 'litellm_params.region_name', label: 'Region', kind: 'str' },
    { name: 'litellm_params.api_base', label: 'API base', kind: 'str', type: 'url', placeholder: 'https://api.openai.com/v1', class: 'url' },
    { name: 'model_info.input_cost_per_token', label: 'Input price (USD per token)', title: 'Input', kind: 'num', show: price('input_cost_per_token') },
    { name: 'model_info.output_cost_per_token', label: 'Output price (USD per token)', title: 'Output', kind: 'num', show: price('output_cost_per_token') },
    { name: 'litellm_params.rpm', label: 'Requests per minute', kind: 'num' },
    { name: 'litellm_params.tpm', label: 'Tokens per minute', kind: 'num' },
    { name: 'limits', label: 'Limits', show: (d) => {
      const p = d.litellm_params || {};
      const i = d.model_info || {};
      return [[p.rpm, ' rpm'], [p.tpm, ' tpm'], [i.max_input_tokens, ' in'], [i.max_output_tokens, ' out']].filter(([v]) => v).map(([v, u]) => v.toLocaleString() + u).join(', ');
    } },
    { name: 'source', label: 'Source', show: (d) => (stored(d) ? el('span', { class: 'tag ok' }, 'stored') : el('span', { class: 'tag' }, 'config')) },
  ],
  columns: ['model_info.id', 'provider', 'litellm_params.model', 'litellm_params.region_name', 'litellm_params.api_base',
    'model_info.input_cost_per_token', 'model_info.output_cost_per_token', 'limits', 'source'],
};
