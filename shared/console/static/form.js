// form.js: the console's one form model, pure (no DOM: node --test runs
// it, test/console/*.test.mjs). A spec is a list of fields, each
//   {name (the admin API's body field), label, kind: 'str' | 'num' |
//    'list' | 'json' | 'bool' | 'select', create (only on create), readonly}
// and a form's values are its controls' text by name (trimmed; checkboxes
// booleans). The rules, one for every page:
//  - numbers: text that reads as a decimal number (JSON's grammar, with a
//    leading + or . allowed) is sent as that number; anything else ("abc",
//    "0x10", "Infinity") is sent as typed, so the API refuses it and its
//    error names the field;
//  - lists: comma-separated; an emptied list is [] (LiteLLM's models are
//    a non-null list where [] means every model; Sluice reads [] and null
//    alike), never null;
//  - an emptied number, text or JSON field is null: it clears the setting;
//  - creating, empty fields are left out; editing, only the fields whose
//    text changed are sent.

// fieldError is an error found before calling the API (JSON that does not
// parse), shown like the API's: next to the field its param names.
export function fieldError(param, message) {
  const e = new Error(message);
  e.param = param;
  return e;
}

const decimal = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

// numeric is what a number field sends: a number when the text reads as
// one, else the text as typed (for the API's own refusal).
export function numeric(v) {
  return decimal.test(v) ? Number(v) : v;
}

// list splits comma-separated text, blanks left out.
export function list(v) {
  return String(v).split(',').map((s) => s.trim()).filter(Boolean);
}

// text is a record's value as a form control shows it (the inverse of
// value).
export function text(kind, v) {
  if (kind === 'bool') return !!v;
  if (v === null || v === undefined) return '';
  if (kind === 'list') return Array.isArray(v) ? v.join(', ') : String(v);
  if (kind === 'json') return typeof v === 'object' && Object.keys(v).length === 0 ? '' : JSON.stringify(v, null, 2);
  return String(v);
}

// value converts a control's text to the body field of f's kind; empty is
// [] for a list, null otherwise (on an edit: clear the setting).
export function value(f, v) {
  if (f.kind === 'bool') return !!v;
  if (v === '' || v === undefined || v === null) return f.kind === 'list' ? [] : null;
  switch (f.kind) {
    case 'num':
      return numeric(v);
    case 'list':
      return list(v);
    case 'json':
      try {
        return JSON.parse(v);
      } catch (e) {
        throw fieldError(f.name, `${f.name}: not JSON (${e.message})`);
      }
  }
  return v;
}

// at is the value of a field in record: a dotted name is a path
// ('litellm_params.model'); a field's get(record), when it has one.
export function at(f, record) {
  if (f.get) return f.get(record);
  return f.name.split('.').reduce((o, k) => (o === null || o === undefined ? undefined : o[k]), record);
}

// nest turns a body of dotted names into nested objects:
// {'litellm_params.model': 'x'} → {litellm_params: {model: 'x'}}.
export function nest(flat) {
  const out = {};
  for (const [name, v] of Object.entries(flat)) {
    const path = name.split('.');
    let o = out;
    for (const k of path.slice(0, -1)) o = o[k] ??= {};
    o[path[path.length - 1]] = v;
  }
  return out;
}

// formFields are the spec's fields a form shows: those with a kind,
// editing (a record given) without the create-only ones.
export function formFields(spec, record) {
  return spec.filter((f) => f.kind && !(record && f.create));
}

// body builds the request body from a form's values: creating (no
// record), the fields given; editing, only the fields whose text changed
// (emptied: null, or [] for a list), so an edit changes nothing else.
export function body(spec, values, record) {
  const out = {};
  for (const f of formFields(spec, record)) {
    if (!(f.name in values) || f.readonly) continue;
    const v = values[f.name];
    if (record) {
      if (v === text(f.kind, at(f, record))) continue;
    } else if (v === '' || v === false) continue;
    out[f.name] = value(f, v);
  }
  return out;
}

// choices are the options of a picker field (a select: the team by its
// alias; a multiple select for a list: the models), from its options(c):
// c is what the page loaded (teams, models); null when it could not load
// them, and the field stays a text box. The record's current value(s)
// missing from them are added (labelled as they are), so an edit never
// drops a value the picker does not offer.
export function choices(f, c, current) {
  const opts = typeof f.options === 'function' ? f.options(c || {}) : f.options;
  if (!opts) return null;
  const out = [...opts];
  const have = new Set(out.map(([v]) => String(v)));
  const vals = f.kind === 'list' ? (Array.isArray(current) ? current : list(current || '')) : [current ?? ''];
  for (const v of vals) {
    if (v !== '' && v !== null && v !== undefined && !have.has(String(v))) {
      out.push([String(v), String(v)]);
      have.add(String(v));
    }
  }
  return out;
}

// allowedModels are the model groups a key of a team may be given: the
// team's models, when it names any (all of them for '*' or
// 'all-proxy-models'); null: any model.
export function allowedModels(t) {
  const m = (t && t.models) || [];
  if (m.length === 0 || m.includes('*') || m.includes('all-proxy-models')) return null;
  return m;
}
