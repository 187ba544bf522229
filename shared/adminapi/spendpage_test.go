package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestSpendLogPages: GET /spend/logs with page/page_size answers
// LiteLLM's paged object and reaches every log exactly once; without them
// it keeps the bare list, cut at spend.DefaultLogLimit, with the total in
// X-Total-Count. Bad paging is a 400 naming the parameter. On both stores.
func TestSpendLogPages(t *testing.T) {
	const n = 1100
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			gw := build(t, store, nil)
			c := client{t, gw.HTTP}
			now := time.Now().UTC()
			evs := make([]spend.Event, n)
			for i := range evs {
				evs[i] = spend.Event{Version: spend.Version, RequestID: fmt.Sprintf("%s-page-%04d", t.Name(), i),
					Start: now.Add(-time.Minute), End: now.Add(-time.Duration(i%7) * time.Second), Status: spend.StatusSuccess,
					ModelGroup: "gpt-4o", Provider: "openai", Model: "gpt-4o", CallType: "chat", PromptTokens: 1, CompletionTokens: 1, Cost: 1, CostKnown: true}
			}
			if res, err := gw.Spend.Record(context.Background(), evs); err != nil || res.Recorded != n {
				t.Fatalf("Record: %+v, %v", res, err)
			}
			const m = "sk-master-test"

			// Unpaged: LiteLLM's bare list, cut, and the total says so.
			r := httptest.NewRequest("GET", "/spend/logs", nil)
			r.Header.Set("Authorization", "Bearer "+m)
			w := httptest.NewRecorder()
			gw.HTTP.ServeHTTP(w, r)
			var list []map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 || len(list) != spend.DefaultLogLimit {
				t.Fatalf("unpaged: %d, %d rows, %v", w.Code, len(list), err)
			}
			if got := w.Header().Get("X-Total-Count"); got != fmt.Sprint(n) {
				t.Fatalf("X-Total-Count %q, want %d", got, n)
			}

			// Paged: every log once, LiteLLM's fields.
			for _, size := range []int{1000, 300} {
				seen := map[string]bool{}
				pages := (n + size - 1) / size
				for page := 1; page <= pages+1; page++ {
					out := c.must(m, "GET", fmt.Sprintf("/spend/logs?page=%d&page_size=%d", page, size), "")
					data, _ := out["data"].([]any)
					want := max(0, min(size, n-(page-1)*size))
					if len(data) != want || out["total"] != float64(n) || out["page"] != float64(page) ||
						out["page_size"] != float64(size) || out["total_pages"] != float64(pages) {
						t.Fatalf("page %d of size %d: %d rows, %v; want %d rows, total %d, %d pages", page, size, len(data), without(out, "data"), want, n, pages)
					}
					for _, row := range data {
						id := row.(map[string]any)["request_id"].(string)
						if seen[id] {
							t.Fatalf("size %d: %s on two pages", size, id)
						}
						seen[id] = true
					}
				}
				if len(seen) != n {
					t.Fatalf("size %d: %d distinct logs, want %d", size, len(seen), n)
				}
			}
			if out := c.must(m, "GET", "/spend/logs?page=2", ""); len(out["data"].([]any)) != 50 || out["page_size"] != 50.0 {
				t.Errorf("page without page_size: %v, want LiteLLM's default of 50", without(out, "data"))
			}

			for _, bad := range []struct{ query, param string }{
				{"page_size=1001", "page_size"},
				{"page_size=0", "page_size"},
				{"page_size=-5", "page_size"},
				{"page_size=NaN", "page_size"},
				{"page=0", "page"},
				{"page=-1", "page"},
				{"page=NaN", "page"},
				{"page=1.5", "page"},
				{"page=1000001", "page"},
				{"page=99999999999999999999&page_size=1000", "page"},
			} {
				c.errParam(m, "GET", "/spend/logs?"+bad.query, "", 400, bad.param)
			}
		})
	}
}

func without(m map[string]any, k string) map[string]any {
	out := map[string]any{}
	for kk, v := range m {
		if kk != k {
			out[kk] = v
		}
	}
	return out
}
