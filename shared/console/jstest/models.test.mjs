// Unit tests of the models page's pure parts: the deployment spec's
// bodies for /model/new and PATCH /model/{id}/update (LiteLLM's nested
// shape), and the write-only api_key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { body, nest, at, text, formFields } from '../static/form.js';
import { model, stored } from '../static/specs.js';

const shown = (spec, r) => Object.fromEntries(formFields(spec, r).map((f) => [f.name, text(f.kind, at(f, r))]));

test('nest: dotted names become LiteLLM\'s nested objects', () => {
  assert.deepEqual(nest({ model_name: 'g', 'litellm_params.model': 'openai/x', 'litellm_params.rpm': 5, 'model_info.id': 'd1' }),
    { model_name: 'g', litellm_params: { model: 'openai/x', rpm: 5 }, model_info: { id: 'd1' } });
  assert.deepEqual(nest({}), {});
});

test('at reads a dotted path, missing parents included', () => {
  assert.equal(at({ name: 'litellm_params.model' }, { litellm_params: { model: 'm' } }), 'm');
  assert.equal(at({ name: 'litellm_params.model' }, {}), undefined);
  assert.equal(at({ name: 'model_info.id' }, { model_info: null }), undefined);
});

test('/model/new body: what was typed, nested; prices and limits as numbers', () => {
  const v = { 'model_info.id': '', model_name: 'team-gpt', 'litellm_params.model': 'openai/gpt-4o-mini', 'litellm_params.api_key': 'sk-up-1',
    'litellm_params.region_name': '', 'litellm_params.api_base': 'http://127.0.0.1:9/v1', 'model_info.input_cost_per_token': '0.000001',
    'model_info.output_cost_per_token': '', 'litellm_params.rpm': '60', 'litellm_params.tpm': 'lots' };
  assert.deepEqual(nest(body(model.fields, v)), {
    model_name: 'team-gpt',
    litellm_params: { model: 'openai/gpt-4o-mini', api_key: 'sk-up-1', api_base: 'http://127.0.0.1:9/v1', rpm: 60, tpm: 'lots' },
    model_info: { input_cost_per_token: 0.000001 },
  });
});

test('an edit never shows the stored key and sends a new one only when typed', () => {
  const d = { model_name: 'team-gpt', litellm_params: { model: 'openai/gpt-4o-mini', api_key: 'sk-up-****', rpm: 60 }, model_info: { id: 'd1', db_model: true } };
  const s = shown(model.fields, d);
  assert.equal(s['litellm_params.api_key'], '', 'the key is never filled in');
  assert.equal('model_info.id' in s, false, 'the id is not editable');
  assert.deepEqual(body(model.fields, s, d), {}, 'an untouched form changes nothing (the key stays)');
  assert.deepEqual(nest(body(model.fields, { ...s, 'litellm_params.api_key': 'sk-up-2' }, d)), { litellm_params: { api_key: 'sk-up-2' } });
  assert.deepEqual(nest(body(model.fields, { ...s, 'litellm_params.rpm': '' }, d)), { litellm_params: { rpm: null } });
});

test('stored: LiteLLM\'s db_model mark, nothing else', () => {
  assert.equal(stored({ model_info: { db_model: true } }), true);
  assert.equal(stored({ model_info: { db_model: 'true' } }), false);
  assert.equal(stored({ model_info: {} }), false);
  assert.equal(stored({}), false);
});

test('the model spec\'s columns name its fields', () => {
  const names = new Set(model.fields.map((f) => f.name));
  for (const c of model.columns) assert.ok(names.has(c), c);
});
