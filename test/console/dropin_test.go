package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleDropIn: the console as a LiteLLM UI user expects it (issue
// 31): the key form picks its team by alias and its models from those the
// team may use; keys, the spend chart and the logs show teams by alias; a
// log row opens its detail (status, error, deployment, retries, timings,
// tokens, cost); at 375 px the spend chart fits the screen, and at 1400 px
// no cell of the models table is cut off.
func TestConsoleDropIn(t *testing.T) {
	ctx := browser(t)
	s := start(t, stores()[0])
	s.mustCall(t, http.MethodPost, "/team/new", master, map[string]any{"team_id": "team-pick", "team_alias": "Picked", "models": []string{"gpt-4o-mini"}}, nil)
	s.mustCall(t, http.MethodPost, "/team/new", master, map[string]any{"team_id": "team-other", "team_alias": "Other team"}, nil)
	signIn(t, ctx, s.base, master)
	open(t, ctx, s.base, "#/keys")
	run(t, ctx, "open the create form", chromedp.Click(chromedp.CSS(`details.create summary`)), visible(`details.create [name="key_alias"]`))

	// The team is picked by alias; once picked, only its models are offered.
	teams := get(t, ctx, "team options", chromedp.Evaluate[string](`[...document.querySelectorAll('details.create select[name="team_id"] option')].map((o) => o.value + '=' + o.textContent).join('|')`))
	if !strings.Contains(teams, "team-pick=Picked") || !strings.Contains(teams, "team-other=Other team") {
		t.Fatalf("the key form's team picker offers %q; want the teams by alias", teams)
	}
	run(t, ctx, "pick the team",
		js(`(() => { const s = document.querySelector('details.create select[name="team_id"]'); s.value = 'team-pick'; s.dispatchEvent(new Event('change')); })()`))
	offered := get(t, ctx, "model options", chromedp.Evaluate[string](`[...document.querySelectorAll('details.create select[name="models"] option')].filter((o) => !o.hidden && !o.disabled).map((o) => o.value).join(',')`))
	if offered != "gpt-4o-mini" {
		t.Fatalf("models offered for team Picked: %q; want only its gpt-4o-mini", offered)
	}
	run(t, ctx, "create the key",
		fill("details.create", "key_alias", "picked-key"),
		js(`(() => { for (const o of document.querySelector('details.create select[name="models"]').options) o.selected = o.value === 'gpt-4o-mini'; })()`),
		chromedp.Click(chromedp.CSS(`details.create button[type="submit"]`)),
		visible(`.shown input`))
	secret := get(t, ctx, "the secret", chromedp.Evaluate[string](`document.querySelector('.shown input').value`))
	var info struct {
		Info struct {
			TeamID string   `json:"team_id"`
			Models []string `json:"models"`
		} `json:"info"`
	}
	s.mustCall(t, http.MethodGet, "/key/info?key="+secret, master, nil, &info)
	if info.Info.TeamID != "team-pick" || strings.Join(info.Info.Models, ",") != "gpt-4o-mini" {
		t.Fatalf("the key made with the pickers: team %q, models %v", info.Info.TeamID, info.Info.Models)
	}
	row := get(t, ctx, "the key's row", chromedp.Poll[string](`(() => { const r = [...document.querySelectorAll('.page-keys tbody tr')].find((tr) => tr.textContent.includes('picked-key')); return r ? r.textContent : ''; })()`, chromedp.WithPollingTimeout(stepTimeout)))
	if !strings.Contains(row, "Picked") || strings.Contains(row, "team-pick") {
		t.Errorf("the keys list shows the team as %q; want its alias", row)
	}

	// Spend: the team by alias in the chart's table and the logs; a log opens.
	id := s.chatCallID(t, secret, "gpt-4o-mini")
	s.waitLogged(t, id)
	openSpend(t, ctx, s, "by=team", `[data-test="spend-chart"] svg rect`)
	get(t, ctx, "team Picked in the chart's table", chromedp.Poll[string](rowSpend("Picked"), chromedp.WithPollingTimeout(stepTimeout)))
	logRow := get(t, ctx, "the log row", chromedp.Poll[string](`(() => { const r = [...document.querySelectorAll('.page-spend:not([data-stale]) [data-test="spend-logs"] tbody tr')].find((tr) => tr.textContent.includes(`+jsString(id)+`)); return r ? r.textContent : ''; })()`, chromedp.WithPollingTimeout(stepTimeout)))
	if !strings.Contains(logRow, "Picked") {
		t.Errorf("the log row shows %q; want team Picked", logRow)
	}
	run(t, ctx, "open the log", chromedp.Click(chromedp.CSS(`.page-spend:not([data-stale]) [data-test="spend-logs"] button[aria-label="Details of request `+id+`"]`)), visible(`[data-test="log-detail"]`))
	detail := text(t, ctx, `[data-test="log-detail"]`)
	for _, want := range []string{id, "success", "Deployment", "Retries", "Duration", "Tokens", "Cost", "Picked"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the log's detail lacks %q: %s", want, detail)
		}
	}

	// 375 px: the chart fits the screen.
	run(t, ctx, "narrow", chromedp.EmulateViewport(375, 800))
	openSpend(t, ctx, s, "by=team&metric=spend", `[data-test="spend-chart"] svg`)
	fit := get(t, ctx, "chart width", chromedp.Evaluate[string](`(() => { const r = document.querySelector('.page-spend:not([data-stale]) [data-test="spend-chart"] svg').getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth ? '' : 'svg from ' + r.left + ' to ' + r.right + ' px of ' + window.innerWidth; })()`))
	if fit != "" {
		t.Errorf("at 375 px the spend chart does not fit: %s", fit)
	}
	if w := get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 375 {
		t.Errorf("at 375 px the spend page is %d px wide", w)
	}

	// 1400 px: the models table's long values wrap, so that every column
	// shows within the page (no column cut off at the table's edge).
	run(t, ctx, "wide", chromedp.EmulateViewport(1400, 900))
	defer run(t, ctx, "back to the usual size", chromedp.EmulateViewport(1280, 860))
	wide := startConfig(t, stores()[0], []byte(wideModels))
	signIn(t, ctx, wide.base, master)
	open(t, ctx, wide.base, "#/models")
	clipped := get(t, ctx, "clipped cells", chromedp.Evaluate[string](`(() => {
  const out = [];
  for (const wrap of document.querySelectorAll('.page-models .table-wrap')) {
    const r = wrap.getBoundingClientRect();
    if (r.right > window.innerWidth + 1) out.push('a table reaches ' + Math.round(r.right) + ' px');
    if (wrap.scrollWidth > wrap.clientWidth + 1) out.push('a table of ' + wrap.scrollWidth + ' px is cut at ' + wrap.clientWidth + ' px');
    for (const td of wrap.querySelectorAll('td, th')) {
      if (td.scrollWidth > td.clientWidth + 1) out.push(td.dataset.label + ': ' + td.textContent.slice(0, 40));
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth) out.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
  return out.join('; ');
})()`))
	if clipped != "" {
		t.Errorf("at 1400 px the models page cuts off: %s", clipped)
	}
}

// wideModels is a config whose models table is wide: long names without
// a place to break, a long API base, big limits.
const wideModels = `model_list:
  - model_name: averyveryverylongmodelgroupnamethatdoesnotbreakanywhere
    litellm_params:
      model: openai/averyveryverylongprovidermodelnamewithoutanybreakopportunity20261202
      api_base: https://averyveryverylongresourcenamewithoutbreaks.openai.azure.example.com/openai/deployments/averyveryverylongdeploymentname
      api_key: sk-wide
      region_name: eu-central-1
      rpm: 100000000
      tpm: 100000000000
    model_info: {id: averyveryverylongdeploymentidentifierwithoutanybreakopportunity0123456789}
`

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
