// The models page: the config's model groups and deployments (provider,
// region, prices, limits) and each one's live cooldown from /model/info
// (Sluice's cooling_down / cooldown_until fields; Refresh reads them
// again), and a health check (/health, or /health?model=<group>) showing
// each deployment's result.
import { el, table, errorBox, button, num, toast, field } from '../ui.js';
import { isAdmin } from '../roles.js';
import { linkCSS } from '../chart.js';

// perMillion shows a per-token price as dollars per million tokens.
const perMillion = (v) => (v === null || v === undefined ? '' : '$' + (Number(v) * 1e6).toFixed(Number(v) * 1e6 < 1 ? 3 : 2) + ' / 1M');

export default {
  id: 'models',
  title: 'Models',
  async render(root, { api, me }) {
    linkCSS();
    root.append(el('h1', {}, 'Models'));
    let res;
    try {
      res = await api.get('/model/info');
    } catch (e) {
      root.append(errorBox(e));
      return;
    }
    let deps = res.data || [];
    let groups = byGroup(deps);
    const health = new Map(); // deployment id → {ok, error}
    const healthCell = (d) => {
      const h = health.get(d.model_info && d.model_info.id);
      if (!h) return el('span', { class: 'empty', 'data-health': 'unknown' }, 'not checked');
      return el('span', { class: 'tag ' + (h.ok ? 'ok' : 'bad'), 'data-health': h.ok ? 'healthy' : 'unhealthy', title: h.error || '' }, h.ok ? 'healthy' : 'unhealthy');
    };

    const toolbar = el('div', { class: 'toolbar' });
    const summary = el('p', { class: 'help' });
    const counts = () => {
      const cooling = deps.filter((d) => d.model_info && d.model_info.cooling_down === true).length;
      summary.textContent = `${groups.size} model groups, ${deps.length} deployments, from the gateway's config; ${cooling} cooling down (as of ${new Date().toLocaleTimeString([], { hour12: false })}).`;
    };
    root.append(summary, toolbar);
    const listBox = el('div', { 'data-test': 'model-groups' });
    const resultBox = el('div', { 'data-test': 'health-results', 'aria-live': 'polite' });
    root.append(listBox, resultBox);

    const draw = () => {
      listBox.replaceChildren();
      for (const [name, ds] of groups) {
        listBox.append(el('h2', { class: 'mono' }, name), table([
          { label: 'Deployment', value: (d) => d.model_info && d.model_info.id, class: 'mono' },
          { label: 'Provider', value: (d) => (d.model_info && d.model_info.litellm_provider) || providerOf(d) },
          { label: 'Model', value: (d) => d.litellm_params && d.litellm_params.model, class: 'mono' },
          { label: 'Region', value: (d) => d.litellm_params && d.litellm_params.region_name },
          { label: 'API base', value: (d) => d.litellm_params && d.litellm_params.api_base },
          { label: 'Input', value: (d) => perMillion(price(d, 'input_cost_per_token')) },
          { label: 'Output', value: (d) => perMillion(price(d, 'output_cost_per_token')) },
          { label: 'Limits', value: (d) => limits(d) },
          { label: 'Cooldown', value: cooldownCell },
          { label: 'Health', value: healthCell },
        ], ds));
      }
      if (!groups.size) listBox.append(el('p', { class: 'empty' }, 'No model you may use.'));
      counts();
    };
    draw();

    // Refresh reads /model/info again: the cooldowns are live state.
    const refresh = button('Refresh', async () => {
      let r;
      try {
        r = await api.get('/model/info');
      } catch (e) {
        toast(e.message || String(e), 'error');
        return;
      }
      deps = r.data || [];
      groups = byGroup(deps);
      draw();
    });
    refresh.dataset.test = 'refresh';
    toolbar.append(refresh);

    if (isAdmin(me)) {
      const pick = field({ name: 'model', label: 'Check', value: '', options: [['', 'every deployment'], ...[...groups.keys()].map((g) => [g, g])] });
      toolbar.append(pick, button('Run health check', async () => {
        const model = pick.querySelector('select').value;
        resultBox.replaceChildren(el('p', {}, 'Checking…'));
        let r;
        try {
          r = await api.get('/health', { model });
        } catch (e) {
          resultBox.replaceChildren(errorBox(e));
          return;
        }
        if (!r || !Array.isArray(r.healthy_endpoints)) {
          // The admin function answers /health as a probe only: the
          // deployments' check runs on the gateway's URL (docs/console.md).
          resultBox.replaceChildren(el('p', { class: 'notice' }, 'This URL answers /health as a liveness probe only (' + JSON.stringify(r) + '): call /health on the gateway’s URL to check the deployments.'));
          return;
        }
        for (const e of r.healthy_endpoints) health.set(e.model_id, { ok: true });
        for (const e of r.unhealthy_endpoints || []) health.set(e.model_id, { ok: false, error: e.error });
        draw();
        const rows = [...r.healthy_endpoints.map((e) => ({ ...e, ok: true })), ...(r.unhealthy_endpoints || []).map((e) => ({ ...e, ok: false }))];
        resultBox.replaceChildren(el('h2', {}, `Health: ${r.healthy_count} healthy, ${r.unhealthy_count} unhealthy`), table([
          { label: 'Deployment', value: (e) => e.model_id, class: 'mono' },
          { label: 'Group', value: (e) => e.model_name },
          { label: 'Model', value: (e) => e.model, class: 'mono' },
          { label: 'Result', value: (e) => el('span', { class: 'tag ' + (e.ok ? 'ok' : 'bad') }, e.ok ? 'healthy' : 'unhealthy') },
          { label: 'Error', value: (e) => e.error },
        ], rows));
        toast(`Health check: ${r.healthy_count} healthy, ${r.unhealthy_count} unhealthy`, r.unhealthy_count ? 'error' : 'ok');
      }, 'primary'));
    }
    root.append(el('p', { class: 'help' }, 'Cooldown: a deployment that keeps failing is taken out of rotation for cooldown_time (docs/routing.md); the column shows when that ends, as the shared cooldown store says when the page was loaded or refreshed.'));
  },
};

function byGroup(deps) {
  const groups = new Map();
  for (const d of deps) {
    if (!groups.has(d.model_name)) groups.set(d.model_name, []);
    groups.get(d.model_name).push(d);
  }
  return groups;
}

// cooldownCell shows model_info.cooling_down: true (until when, in local
// time; the UTC time in the title), false ("—"), or null (the store did
// not answer).
function cooldownCell(d) {
  const i = d.model_info || {};
  if (i.cooling_down === true) {
    const until = new Date(i.cooldown_until);
    const at = isNaN(until) ? String(i.cooldown_until) : until.toLocaleTimeString([], { hour12: false });
    return el('span', { class: 'tag bad', 'data-cooldown': 'cooling', title: 'until ' + i.cooldown_until }, 'cooling down until ' + at);
  }
  if (i.cooling_down === false) return el('span', { class: 'empty', 'data-cooldown': 'none' }, '—');
  return el('span', { class: 'empty', 'data-cooldown': 'unknown', title: 'the cooldown store did not answer' }, 'unknown');
}

function price(d, k) {
  const i = d.model_info || {};
  const p = d.litellm_params || {};
  return i[k] ?? p[k];
}

function providerOf(d) {
  const m = (d.litellm_params && d.litellm_params.model) || '';
  return m.includes('/') ? m.split('/')[0] : '';
}

function limits(d) {
  const p = d.litellm_params || {};
  const i = d.model_info || {};
  const out = [];
  if (p.rpm) out.push(num(p.rpm) + ' rpm');
  if (p.tpm) out.push(num(p.tpm) + ' tpm');
  if (i.max_input_tokens) out.push(num(i.max_input_tokens) + ' in');
  if (i.max_output_tokens) out.push(num(i.max_output_tokens) + ' out');
  return out.join(', ');
}
