// Unit tests of the console's form model (shared/console/static/form.js)
// and the record specs' bodies: run by node --test (TestFormModel runs
// them from go test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { numeric, list, text, value, body, formFields } from '../static/form.js';
import { key, team, user, customer, budget, teamMember, flat } from '../static/specs.js';

test('numeric: decimal text is a number, anything else is sent as typed', () => {
  for (const [in_, want] of [['50', 50], ['-5', -5], ['+2', 2], ['0.25', 0.25], ['.5', 0.5], ['5.', 5], ['1e3', 1000], ['1E-2', 0.01], ['0', 0]]) {
    assert.equal(numeric(in_), want, in_);
  }
  for (const bad of ['abc', '0x10', 'Infinity', 'NaN', '1,000', '1e', '--1', '5 5', '', ' ', '9e999x']) {
    assert.equal(numeric(bad), bad, bad);
  }
  // 2^63 and beyond stay numbers: the API decides whether they fit.
  assert.equal(numeric('9223372036854775808'), 9223372036854775808);
});

test('list: comma-separated, blanks dropped', () => {
  assert.deepEqual(list('gpt-4o-mini, gpt-4o'), ['gpt-4o-mini', 'gpt-4o']);
  assert.deepEqual(list(' a ,, b ,'), ['a', 'b']);
  assert.deepEqual(list(''), []);
  assert.deepEqual(list(' , '), []);
});

test('value: emptied lists are [], other emptied fields null; bad JSON names its field', () => {
  assert.deepEqual(value({ name: 'models', kind: 'list' }, ''), []);
  assert.deepEqual(value({ name: 'models', kind: 'list' }, ' , '), []);
  assert.equal(value({ name: 'max_budget', kind: 'num' }, ''), null);
  assert.equal(value({ name: 'alias', kind: 'str' }, ''), null);
  assert.equal(value({ name: 'metadata', kind: 'json' }, ''), null);
  assert.deepEqual(value({ name: 'metadata', kind: 'json' }, '{"a": [1]}'), { a: [1] });
  assert.equal(value({ name: 'x', kind: 'bool' }, true), true);
  assert.throws(() => value({ name: 'metadata', kind: 'json' }, '{not json'), (e) => e.param === 'metadata' && /^metadata: not JSON/.test(e.message));
});

test('text is value\'s inverse', () => {
  const cases = [['list', ['a', 'b']], ['num', 12.5], ['str', 'x'], ['json', { owner: 'web' }]];
  for (const [kind, v] of cases) assert.deepEqual(value({ name: 'f', kind }, text(kind, v)), v, kind);
  assert.equal(text('json', {}), '');
  assert.equal(text('num', null), '');
  assert.equal(text('list', undefined), '');
  assert.equal(text('bool', 1), true);
});

test('create: every field given, by kind; empty ones and unticked boxes left out', () => {
  const v = { key_alias: 'web', team_id: '', models: 'gpt-4o-mini, gpt-4o', max_budget: '10', budget_duration: '', rpm_limit: 'abc', tpm_limit: '', duration: '90d', metadata: '{"owner": "web"}' };
  assert.deepEqual(body(key.fields, v), { key_alias: 'web', models: ['gpt-4o-mini', 'gpt-4o'], max_budget: 10, rpm_limit: 'abc', duration: '90d', metadata: { owner: 'web' } });
  assert.deepEqual(body(user.fields, { user_id: 'carol', user_email: '', user_role: 'internal_user', auto_create_key: false, max_budget: '50' }),
    { user_id: 'carol', user_role: 'internal_user', max_budget: 50 });
});

test('edit: only the fields whose text changed; emptied ones clear (lists to [])', () => {
  const t = { team_id: 't1', team_alias: 'platform', models: ['gpt-4o'], max_budget: 100, rpm_limit: null, metadata: { a: 1 } };
  const shown = Object.fromEntries(formFields(team.fields, t).map((f) => [f.name, text(f.kind, t[f.name])]));
  assert.equal('team_id' in shown, false, 'a create-only field is not on the edit form');
  assert.deepEqual(body(team.fields, shown, t), {}, 'an untouched form changes nothing');
  assert.deepEqual(body(team.fields, { ...shown, models: '', max_budget: '', rpm_limit: '60', metadata: '' }, t),
    { models: [], max_budget: null, rpm_limit: 60, metadata: null });
  assert.deepEqual(body(team.fields, { ...shown, max_budget: '-5' }, t), { max_budget: -5 });
});

test('a key edit leaves its expiry alone unless a duration is typed', () => {
  const k = { key_alias: 'web', models: [], expires: '2027-01-01T00:00:00Z', duration: '30d' };
  const shown = Object.fromEntries(formFields(key.fields, k).map((f) => [f.name, text(f.kind, (f.get || ((r) => r[f.name]))(k))]));
  assert.equal(shown.duration, '');
  assert.deepEqual(body(key.fields, shown, k), {});
  assert.deepEqual(body(key.fields, { ...shown, duration: '1d' }, k), { duration: '1d' });
});

test('end users and organizations edit their budget table\'s fields', () => {
  const e = flat({ user_id: 'c1', alias: 'one', litellm_budget_table: { max_budget: 10, budget_reset_at: 'r' }, spend: 2 });
  assert.equal(e.max_budget, 10);
  assert.equal(e.budget_id, null);
  assert.equal(e.budget_reset_at, 'r');
  const shown = Object.fromEntries(formFields(customer.fields, e).map((f) => [f.name, text(f.kind, e[f.name])]));
  assert.deepEqual(body(customer.fields, { ...shown, budget_id: 'gold' }, e), { budget_id: 'gold' });
  assert.deepEqual(body(customer.fields, { ...shown, max_budget: '' }, e), { max_budget: null });
});

test('members: the budget in the group is a number field, cleared to null only when it was set', () => {
  const spec = teamMember.fields;
  assert.deepEqual(body(spec, { user_id: 'carol', user_email: '', role: 'user', max_budget_in_team: 'abc', budget_id: '' }),
    { user_id: 'carol', role: 'user', max_budget_in_team: 'abc' });
  const was = { role: 'user', max_budget_in_team: 25 };
  assert.deepEqual(body(spec, { role: 'admin', max_budget_in_team: '30' }, was), { role: 'admin', max_budget_in_team: 30 });
  assert.deepEqual(body(spec, { role: 'user', max_budget_in_team: '' }, was), { max_budget_in_team: null });
  assert.deepEqual(body(spec, { role: 'user', max_budget_in_team: '' }, { role: 'user' }), {});
});

test('every kind\'s columns and facts name its fields', () => {
  for (const [name, kind] of Object.entries({ key, team, user, customer, budget })) {
    const names = new Set(kind.fields.map((f) => f.name));
    for (const c of [...kind.columns, ...(kind.facts || [])]) assert.ok(names.has(c), `${name}: ${c}`);
    assert.equal(names.size, kind.fields.length, `${name}: a field named twice`);
  }
});

test('choices: a picker offers its options and keeps the record’s values it lacks', async () => {
  const { choices, allowedModels } = await import('../static/form.js');
  const teamField = key.fields.find((f) => f.name === 'team_id');
  const modelsField = key.fields.find((f) => f.name === 'models');
  const loaded = { teams: [{ team_id: 't1', team_alias: 'Research' }, { team_id: 't2' }], models: ['gpt-4o', 'gpt-4o-mini'] };
  assert.deepEqual(choices(teamField, loaded, 't1'), [['', 'No team'], ['t1', 'Research'], ['t2', 't2']]);
  assert.deepEqual(choices(teamField, loaded, 'gone'), [['', 'No team'], ['t1', 'Research'], ['t2', 't2'], ['gone', 'gone']]);
  assert.deepEqual(choices(modelsField, loaded, ['gpt-4o', 'old']), [['gpt-4o', 'gpt-4o'], ['gpt-4o-mini', 'gpt-4o-mini'], ['old', 'old']]);
  // nothing loaded: a text box, as before
  assert.equal(choices(teamField, null, ''), null);
  assert.equal(choices(modelsField, {}, []), null);
  // a multiple select's text is the list's: the body is the same
  assert.deepEqual(body(key.fields, { models: 'gpt-4o, gpt-4o-mini', team_id: 't1' }), { models: ['gpt-4o', 'gpt-4o-mini'], team_id: 't1' });
  assert.deepEqual(allowedModels({ models: ['a'] }), ['a']);
  assert.equal(allowedModels({ models: [] }), null);
  assert.equal(allowedModels({ models: ['all-proxy-models'] }), null);
});
