// The models page: the model groups and deployments /model/info lists
// (provider, region, prices, limits), each one's live cooldown (Sluice's
// cooling_down / cooldown_until fields; Refresh reads them again) and a
// health check (/health, or /health?model=<group>). A proxy admin adds
// deployments (/model/new: stored, LiteLLM's store_model_in_db), edits
// (PATCH /model/{id}/update; ?edit=<id>), tests and deletes
// (/model/delete) the stored ones; the config's show read-only.
import { el, table, errorBox, button, toast, field, link } from '../ui.js';
import { isAdmin } from '../roles.js';
import { linkCSS } from '../chart.js';
import { nest } from '../form.js';
import { columns, specForm, panel, rowActions } from '../records.js';
import { model, stored } from '../specs.js';

export default {
  id: 'models',
  title: 'Models',
  async render(root, ctx) {
    const { api, me, params } = ctx;
    linkCSS();
    root.append(el('h1', {}, 'Models'));
    let res;
    try {
      res = await api.get('/model/info');
    } catch (e) {
      root.append(errorBox(e));
      return;
    }
    const admin = isAdmin(me);
    let deps = res.data || [];
    let groups = byGroup(deps);
    const health = new Map(); // deployment id → {ok, error}
    const idOf = (d) => (d.model_info && d.model_info.id) || '';
    const healthCell = (d) => {
      const h = health.get(idOf(d));
      if (!h) return el('span', { class: 'empty', 'data-health': 'unknown' }, 'not checked');
      return el('span', { class: 'tag ' + (h.ok ? 'ok' : 'bad'), 'data-health': h.ok ? 'healthy' : 'unhealthy', title: h.error || '' }, h.ok ? 'healthy' : 'unhealthy');
    };

    const toolbar = el('div', { class: 'toolbar' });
    const summary = el('p', { class: 'help' });
    const counts = () => {
      const cooling = deps.filter((d) => d.model_info && d.model_info.cooling_down === true).length;
      const own = deps.filter(stored).length;
      summary.textContent = `${groups.size} model groups, ${deps.length} deployments (${deps.length - own} from the gateway's config, ${own} stored); ${cooling} cooling down (as of ${new Date().toLocaleTimeString([], { hour12: false })}).`;
    };
    const editSlot = el('div', { class: 'record-edit' });
    root.append(summary, toolbar, editSlot);
    const listBox = el('div', { 'data-test': 'model-groups' });
    const resultBox = el('div', { 'data-test': 'health-results', 'aria-live': 'polite' });
    root.append(listBox, resultBox);

    // check runs one health call (/health, or ?model=group) and records
    // each deployment's result; it returns the answer, or null when this
    // URL answers /health as a probe only.
    const check = async (group) => {
      const r = await api.get('/health', { model: group });
      if (!r || !Array.isArray(r.healthy_endpoints)) {
        // The admin function answers /health as a probe only: the
        // deployments' check runs on the gateway's URL (docs/console.md).
        resultBox.replaceChildren(el('p', { class: 'notice' }, 'This URL answers /health as a liveness probe only (' + JSON.stringify(r) + '): call /health on the gateway’s URL to check the deployments.'));
        return null;
      }
      for (const e of r.healthy_endpoints) health.set(e.model_id, { ok: true });
      for (const e of r.unhealthy_endpoints || []) health.set(e.model_id, { ok: false, error: e.error });
      draw();
      return r;
    };

    const actions = (d) => {
      const id = idOf(d);
      if (!admin) return '';
      const test = button('Test', async () => {
        if (!(await check(d.model_name))) return;
        const h = health.get(id);
        toast(`${id}: ${h ? (h.ok ? 'healthy' : 'unhealthy: ' + h.error) : 'not checked'}`, h && h.ok ? 'ok' : 'error');
      });
      if (!stored(d)) return rowActions(id, test, el('span', { class: 'help', 'data-readonly': true, title: 'Change it in the config file' }, 'config: read-only'));
      return rowActions(id,
        link('Edit', 'models', { edit: id }),
        test,
        button('Delete', async () => {
          if (!window.confirm(`Delete deployment ${id} of ${d.model_name}? Requests stop reaching it.`)) return;
          await api.post('/model/delete', { id });
          toast(`Deployment ${id} deleted`);
          ctx.reload();
        }, 'danger'));
    };

    const draw = () => {
      listBox.replaceChildren();
      for (const [name, ds] of groups) {
        listBox.append(el('h2', { class: 'mono' }, name), table(columns(model, ctx,
          { label: 'Cooldown', value: cooldownCell },
          { label: 'Health', value: healthCell },
          { label: 'Actions', value: actions }), ds));
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

    if (admin) {
      const pick = field({ name: 'model', label: 'Check', value: '', options: [['', 'every deployment'], ...[...groups.keys()].map((g) => [g, g])] });
      toolbar.append(pick, button('Run health check', async () => {
        resultBox.replaceChildren(el('p', {}, 'Checking…'));
        let r;
        try {
          r = await check(pick.querySelector('select').value);
        } catch (e) {
          resultBox.replaceChildren(errorBox(e));
          return;
        }
        if (!r) return;
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

      const editing = params.get('edit') && deps.find((d) => stored(d) && idOf(d) === params.get('edit'));
      if (editing) editSlot.append(editPanel(ctx, editing));
      root.append(panel('Add a model', specForm({
        spec: model.fields,
        me,
        submit: 'Add model',
        test: 'new-model',
        onSave: async (body) => {
          const d = await api.post('/model/new', nest(body));
          toast(`Deployment ${idOf(d) || d.model_name || ''} added to ${body.model_name}`);
          ctx.reload();
        },
      }), el('p', { class: 'help' }, 'A stored deployment is served by every gateway instance once it reloads the stored models; the config’s deployments change only with the config file.')));
    }
    root.append(el('p', { class: 'help' }, 'Cooldown: a deployment that keeps failing is taken out of rotation for cooldown_time (docs/routing.md); the column shows when that ends, as the shared cooldown store says when the page was loaded or refreshed.'));
    if (editSlot.firstChild) editSlot.querySelector('input').focus();
  },
};

// editPanel edits stored deployment d: only what changed is sent
// (PATCH /model/{id}/update, LiteLLM's partial update); a new api_key is
// sent once and never shown.
function editPanel(ctx, d) {
  const id = d.model_info.id;
  return panel('Edit deployment ' + id, specForm({
    spec: model.fields,
    record: d,
    me: ctx.me,
    submit: 'Save deployment',
    test: 'edit-model',
    onSave: async (body) => {
      if (Object.keys(body).length === 0) {
        toast('Nothing changed');
        return;
      }
      await ctx.api.request('PATCH', `/model/${encodeURIComponent(id)}/update`, { body: nest(body) });
      toast(`Deployment ${id} saved`);
      ctx.go('models', {});
    },
  }), link('Cancel', 'models', {}));
}

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
