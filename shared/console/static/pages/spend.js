// The spend page: a chart of spend, requests or tokens per key, team,
// user, model group or provider over a chosen period (day buckets), top
// spenders, budget use, and the spend logs. Only LiteLLM's routes:
// /user/daily/activity (breakdowns by api_keys, entities = users, models,
// providers), /team/daily/activity (entities = teams), /key/list,
// /team/list, /user/list and /spend/logs (paged, filtered).
import { el, table, pager, form, field, errorBox, showError, money, num, date } from '../ui.js';
import { isViewer } from '../roles.js';
import { stackedBars, MAX_SERIES } from '../chart.js';

const DIMENSIONS = [['key', 'Key'], ['team', 'Team'], ['user', 'User'], ['model', 'Model group'], ['provider', 'Provider']];
const METRICS = [['spend', 'Spend'], ['requests', 'Requests'], ['tokens', 'Tokens']];
const metricOf = { spend: (m) => m.spend || 0, requests: (m) => m.api_requests || 0, tokens: (m) => m.total_tokens || 0 };
const DAY = 86400000;
const iso = (t) => new Date(t).toISOString().slice(0, 10);

// days lists the UTC days from start to end, inclusive (at most 400, the
// API's bound).
function days(start, end) {
  const out = [];
  for (let t = Date.parse(start); t <= Date.parse(end) && out.length < 400; t += DAY) out.push(iso(t));
  return out;
}

const fmt = (metric) => (metric === 'spend' ? money : num);

// aggregate reads [{date, breakdown}] into per-id totals and per-day
// values: {ids: Map(id → {spend, requests, tokens, byDay: Map(day → metrics)})}.
function aggregate(results, pick) {
  const ids = new Map();
  for (const r of results || []) {
    for (const [id, v] of Object.entries(pick(r.breakdown || {}) || {})) {
      const m = v.metrics || {};
      let e = ids.get(id);
      if (!e) ids.set(id, (e = { id, spend: 0, requests: 0, tokens: 0, byDay: new Map() }));
      e.spend += m.spend || 0;
      e.requests += m.api_requests || 0;
      e.tokens += m.total_tokens || 0;
      e.byDay.set(r.date, m);
    }
  }
  return ids;
}

export default {
  id: 'spend',
  title: 'Spend',
  visible: (me) => me.master || !!me.role, // a key of no user may read no spend
  async render(root, { api, me, params, go }) {
    const today = iso(Date.now());
    const p = {
      start_date: params.get('start_date') || iso(Date.now() - 29 * DAY),
      end_date: params.get('end_date') || today,
      by: params.get('by') || 'team',
      metric: params.get('metric') || 'spend',
    };
    const all = Object.fromEntries(params);
    root.append(el('h1', {}, 'Spend'));

    const f = form({
      submit: 'Show',
      fields: [
        field({ name: 'start_date', label: 'From', type: 'date', value: p.start_date }),
        field({ name: 'end_date', label: 'To', type: 'date', value: p.end_date }),
        field({ name: 'by', label: 'Per', value: p.by, options: DIMENSIONS }),
        field({ name: 'metric', label: 'Metric', value: p.metric, options: METRICS }),
      ],
      onSubmit: (v) => go('spend', { ...all, ...v, page: '' }),
    });
    f.classList.add('inline');
    f.setAttribute('aria-label', 'Period and breakdown');
    root.append(el('div', { class: 'toolbar' }, f));

    const range = { start_date: p.start_date, end_date: p.end_date, page_size: 1000 };
    const [activity, keyList, teamActivity, teamList] = await Promise.all([
      api.get('/user/daily/activity', range).catch((e) => e),
      api.get('/key/list', { size: 100, return_full_object: true }).catch(() => ({ keys: [] })),
      teamActivityFor(api, me, range),
      api.get('/team/list').then((r) => (Array.isArray(r) ? r : r.teams || [])).catch(() => []),
    ]);
    // Teams show by alias (LiteLLM's UI): from the team list, and the team
    // activity's entity metadata (team_alias) for teams the list leaves out.
    const teamName = new Map();
    if (teamActivity && !(teamActivity instanceof Error)) {
      for (const r of teamActivity.results || []) {
        for (const [id, e] of Object.entries((r.breakdown || {}).entities || {})) {
          if (e.metadata && e.metadata.team_alias) teamName.set(id, e.metadata.team_alias);
        }
      }
    }
    for (const t of teamList) if (t.team_alias) teamName.set(t.team_id, t.team_alias);
    const keyName = new Map();
    const keyTeam = new Map();
    for (const k of keyList.keys || []) {
      if (typeof k !== 'object' || !k.token) continue;
      keyName.set(k.token, k.key_alias || k.key_name || k.token.slice(0, 10) + '…');
      keyTeam.set(k.token, k.team_id || '');
    }
    const label = {
      key: (id) => (id ? keyName.get(id) || 'key ' + id.slice(0, 10) + '…' : 'master key'),
      team: (id) => (id ? teamName.get(id) || id : 'no team'),
      user: (id) => id,
      model: (id) => id || 'unknown',
      provider: (id) => id || 'unknown',
    };

    const chartBox = el('section', { 'aria-labelledby': 'spend-chart-h' });
    root.append(chartBox);
    if (activity instanceof Error) {
      inPlace(f, chartBox, activity);
    } else {
      const meta = activity.metadata || {};
      root.insertBefore(el('dl', { class: 'summary', 'data-test': 'spend-summary' },
        [['Spend', money(meta.total_spend || 0)], ['Requests', num(meta.total_api_requests || 0)], ['Tokens', num(meta.total_tokens || 0)],
          ['Failed requests', num(meta.total_failed_requests || 0)]].map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v)))), chartBox);
      const per = {
        key: aggregate(activity.results, (b) => b.api_keys),
        user: aggregate(activity.results, (b) => b.entities),
        model: aggregate(activity.results, (b) => b.model_groups || b.models),
        provider: aggregate(activity.results, (b) => b.providers),
        team: teamActivity instanceof Error || !teamActivity ? teamsFromKeys(activity.results, keyTeam) : aggregate(teamActivity.results, (b) => b.entities),
      };
      const dimLabel = DIMENSIONS.find(([d]) => d === p.by)?.[1] || p.by;
      const metLabel = METRICS.find(([m]) => m === p.metric)?.[1] || p.metric;
      chartBox.append(el('h2', { id: 'spend-chart-h' }, `${metLabel} per ${dimLabel.toLowerCase()}, by day`));
      if (p.by === 'team' && teamActivity instanceof Error) {
        chartBox.append(el('p', { class: 'notice' }, 'Teams from your own keys’ teams (the team activity route answered: ' + teamActivity.message + ').'));
      }
      drawChart(chartBox, per[p.by] || new Map(), days(p.start_date, p.end_date), p.metric, label[p.by], `${metLabel} per ${dimLabel.toLowerCase()} from ${p.start_date} to ${p.end_date}`, dimLabel);
      root.append(el('h2', {}, 'Top spenders'), el('div', { class: 'top-spenders' },
        topTable('Keys', per.key, label.key), topTable('Teams', per.team, label.team), topTable('Users', per.user, label.user)));
    }
    // Filled before it is shown, so that what is shown is complete.
    const budgets = el('div', { class: 'budgets', 'data-test': 'budgets' });
    await renderBudgets(budgets, api, me);
    root.append(el('h2', {}, 'Budgets'), budgets);
    await renderLogs(root, api, params, go, p, label.key, label.team);
  },
};

// inPlace shows the API's refusal next to the field of form f its param
// names (a bad date or status), else in box.
function inPlace(f, box, e) {
  if (e.param && f.querySelector(`[name="${CSS.escape(e.param)}"]`)) showError(f, e);
  else box.append(errorBox(e));
}

// teamActivityFor is /team/daily/activity for who may read it: every team
// for viewers, the teams one administers, else null (the page then sums
// the keys' teams).
function teamActivityFor(api, me, range) {
  if (isViewer(me)) return api.get('/team/daily/activity', range).catch((e) => e);
  if (me.adminTeams.length) return api.get('/team/daily/activity', { ...range, team_ids: me.adminTeams.join(',') }).catch((e) => e);
  return Promise.resolve(null);
}

function teamsFromKeys(results, keyTeam) {
  const byKey = aggregate(results, (b) => b.api_keys);
  const out = new Map();
  for (const e of byKey.values()) {
    const t = keyTeam.get(e.id) || '';
    let g = out.get(t);
    if (!g) out.set(t, (g = { id: t, spend: 0, requests: 0, tokens: 0, byDay: new Map() }));
    g.spend += e.spend;
    g.requests += e.requests;
    g.tokens += e.tokens;
    for (const [d, m] of e.byDay) {
      const o = g.byDay.get(d) || { spend: 0, api_requests: 0, total_tokens: 0 };
      g.byDay.set(d, { spend: o.spend + (m.spend || 0), api_requests: o.api_requests + (m.api_requests || 0), total_tokens: o.total_tokens + (m.total_tokens || 0) });
    }
  }
  return out;
}

function drawChart(box, ids, dayList, metric, label, caption, dimLabel) {
  const rows = [...ids.values()].sort((a, b) => b[metric] - a[metric] || String(a.id).localeCompare(String(b.id)));
  if (rows.length === 0) {
    box.append(el('p', { class: 'empty' }, 'No spend recorded in this period.'));
    return;
  }
  const shown = rows.slice(0, MAX_SERIES);
  const rest = rows.slice(MAX_SERIES);
  const series = shown.map((r) => ({ name: label(r.id), values: dayList.map((d) => metricOf[metric](r.byDay.get(d) || {})) }));
  if (rest.length) series.push({ name: `Other (${rest.length})`, values: dayList.map((d) => rest.reduce((s, r) => s + metricOf[metric](r.byDay.get(d) || {}), 0)) });
  box.append(stackedBars({ labels: dayList, series, format: fmt(metric), caption }));
  // The chart's text alternative: the same totals, every row.
  const t = table([
    { label: dimLabel, value: (r) => label(r.id) },
    { label: 'Spend', value: (r) => money(r.spend), class: 'num' },
    { label: 'Requests', value: (r) => num(r.requests), class: 'num' },
    { label: 'Tokens', value: (r) => num(r.tokens), class: 'num' },
  ], rows);
  t.setAttribute('data-test', 'spend-table');
  box.append(el('h3', {}, `Totals per ${dimLabel.toLowerCase()}`), t);
}

function topTable(title, ids, label) {
  const rows = [...(ids || new Map()).values()].filter((r) => r.spend > 0).sort((a, b) => b.spend - a.spend).slice(0, 5);
  return el('div', {}, el('h3', {}, title), table([
    { label: title.slice(0, -1), value: (r) => label(r.id) },
    { label: 'Spend', value: (r) => money(r.spend), class: 'num' },
  ], rows, 'No spend.'));
}

// renderBudgets lists the keys, teams and users with a max_budget: spend
// against it and when it resets. Each list is what the API lets the
// signed-in key read; a refusal is shown in place of that list only.
async function renderBudgets(box, api, me) {
  const sources = [
    ['Keys', () => api.get('/key/list', { size: 100, return_full_object: true }).then((r) => r.keys || []), (k) => k.key_alias || k.key_name || k.token],
    ['Teams', () => api.get('/team/list').then((r) => (Array.isArray(r) ? r : r.teams || [])), (t) => t.team_alias || t.team_id],
    ['Users', () => (isViewer(me) ? api.get('/user/list', { page_size: 100 }).then((r) => r.users || []) : api.get('/user/info').then((r) => [r.user_info || {}])), (u) => u.user_id],
  ];
  const got = await Promise.all(sources.map(([, load]) => load().catch((e) => e)));
  let any = false;
  sources.forEach(([title, , name], i) => {
    const v = got[i];
    if (v instanceof Error) {
      if (v.status === 403) return; // not this role's to see
      box.append(el('h3', {}, title), errorBox(v));
      return;
    }
    const rows = v.filter((r) => r && typeof r === 'object' && r.max_budget !== null && r.max_budget !== undefined);
    if (!rows.length) return;
    any = true;
    box.append(el('h3', {}, title), table([
      { label: 'Name', value: name },
      { label: 'Spend', value: (r) => money(r.spend || 0), class: 'num' },
      { label: 'Budget', value: (r) => money(r.max_budget), class: 'num' },
      { label: 'Used', value: (r) => used(r.spend || 0, r.max_budget) },
      { label: 'Resets', value: (r) => (r.budget_reset_at ? date(r.budget_reset_at) : r.budget_duration ? 'every ' + r.budget_duration : 'never') },
    ], rows));
  });
  if (!any && !box.childElementCount) box.append(el('p', { class: 'empty' }, 'No key, team or user you can see has a budget.'));
}

function used(spend, max) {
  const pct = max > 0 ? (spend / max) * 100 : 100;
  return el('span', {}, el('meter', { min: 0, max: max || 1, value: Math.min(spend, max || 1), low: (max || 1) * 0.8, high: (max || 1) * 0.95, optimum: 0, 'aria-label': `${pct.toFixed(0)}% of the budget used` }),
    ' ', `${pct.toFixed(pct < 10 ? 1 : 0)}%`);
}

// renderLogs is the spend logs: filters by request id, key, team, model and
// status (LiteLLM's /spend/logs/ui parameters), paged by the API.
async function renderLogs(root, api, params, go, p, keyLabel, teamLabel) {
  root.append(el('h2', { id: 'logs' }, 'Spend logs'));
  const all = Object.fromEntries(params);
  const q = { request_id: params.get('request_id') || '', api_key: params.get('api_key') || '', team_id: params.get('team_id') || '', model: params.get('model') || '', status_filter: params.get('status_filter') || '' };
  const f = form({
    submit: 'Search',
    fields: [
      field({ name: 'request_id', label: 'Request id', value: q.request_id }),
      field({ name: 'api_key', label: 'Key (secret or hash)', value: q.api_key }),
      field({ name: 'team_id', label: 'Team', value: q.team_id }),
      field({ name: 'model', label: 'Model', value: q.model }),
      field({ name: 'status_filter', label: 'Status', value: q.status_filter, options: [['', 'any'], ['success', 'success'], ['failure', 'failure']] }),
    ],
    onSubmit: (v) => go('spend', { ...all, ...v, page: '' }),
  });
  f.classList.add('inline');
  f.setAttribute('aria-label', 'Search the spend logs');
  f.setAttribute('data-test', 'log-search');
  root.append(el('div', { class: 'toolbar' }, f));
  const page = Number(params.get('page')) || 1;
  // A request id is looked up over the whole retention; other searches
  // over the chosen period (its whole last day).
  const range = q.request_id ? {} : { start_date: p.start_date, end_date: p.end_date };
  let res;
  try {
    res = await api.get('/spend/logs', { ...q, ...range, page, page_size: 25 });
  } catch (e) {
    inPlace(f, root, e);
    return;
  }
  const detail = el('div', { class: 'log-detail-box' });
  const t = table([
    { label: 'Time', value: (l) => date(l.endTime || l.startTime) },
    { label: 'Request id', value: (l) => el('button', { type: 'button', class: 'link mono', 'aria-label': 'Details of request ' + l.request_id,
      onclick: () => showLog(detail, l, keyLabel, teamLabel) }, l.request_id) },
    { label: 'Key', value: (l) => (l.metadata && l.metadata.key_alias) || keyLabel(l.api_key) },
    { label: 'Team', value: (l) => (l.team_id ? (l.metadata && l.metadata.user_api_key_team_alias) || teamLabel(l.team_id) : '') },
    { label: 'User', value: (l) => l.user },
    { label: 'Model', value: (l) => l.model_group || l.model },
    { label: 'Status', value: (l) => el('span', { class: 'tag ' + (l.status === 'success' ? 'ok' : 'bad') }, l.status) },
    { label: 'Tokens', value: (l) => num(l.total_tokens), class: 'num' },
    { label: 'Spend', value: (l) => (l.spend === null ? 'unknown' : money(l.spend)), class: 'num' },
  ], res.data, 'No logs match.');
  t.setAttribute('data-test', 'spend-logs');
  root.append(el('p', { class: 'help', 'data-test': 'logs-total' }, `${num(res.total)} logs`), detail, t,
    pager({ page, pages: res.total_pages, onPage: (n) => go('spend', { ...all, page: n }) }));
}

// showLog opens one log's detail in box: why a call failed or what it
// cost, from the log alone (status and code, deployment, attempts,
// retries and fallbacks, timings, tokens, cost).
function showLog(box, l, keyLabel, teamLabel) {
  const md = l.metadata || {};
  const ms = l.startTime && l.endTime ? new Date(l.endTime) - new Date(l.startTime) : null;
  const failed = l.status !== 'success';
  const facts = [
    ['Status', el('span', { class: 'tag ' + (failed ? 'bad' : 'ok') }, l.status)],
    ['Error', failed ? `HTTP ${md.status_code ?? '—'}` + (l.status === 'client_disconnected' ? ' (the client went away)' : '') : 'none'],
    ['Model group', l.model_group],
    ['Deployment', [l.model_id, l.custom_llm_provider, l.model].filter(Boolean).join(' · ')],
    ['API base', l.api_base],
    ['Retries', String(md.retries ?? 0)],
    ['Fallbacks', String(md.fallbacks ?? 0)],
    ['Started', date(l.startTime)],
    ['Ended', date(l.endTime)],
    ['Duration', ms === null ? '' : `${num(ms)} ms`],
    ['Tokens', `${num(l.prompt_tokens || 0)} in, ${num(l.completion_tokens || 0)} out` + (md.usage_estimated ? ' (estimated)' : '')],
    ['Cost', l.spend === null ? 'unknown (no price)' : money(l.spend)],
    ['Key', md.key_alias || keyLabel(l.api_key)],
    ['Team', l.team_id ? md.user_api_key_team_alias || teamLabel(l.team_id) : ''],
    ['User', l.user],
    ['End user', l.end_user],
    ['Streamed', md.stream ? 'yes' : 'no'],
  ];
  const close = el('button', { type: 'button' }, 'Close');
  box.replaceChildren(el('section', { class: 'panel log-detail', 'data-test': 'log-detail', 'aria-label': 'Request ' + l.request_id },
    el('h3', { class: 'mono' }, 'Request ' + l.request_id),
    el('dl', { class: 'facts' }, facts.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v === '' || v === null || v === undefined ? '—' : v)])),
    el('div', { class: 'actions' }, close)));
  close.addEventListener('click', () => box.replaceChildren());
  box.querySelector('h3').scrollIntoView({ block: 'nearest' });
}
