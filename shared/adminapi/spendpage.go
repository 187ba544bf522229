package adminapi

import (
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/shared/spend"
)

// Paging of GET /spend/logs: LiteLLM's page and page_size (as its
// /spend/logs/v2 and /spend/logs/ui read them), bounded.
const (
	maxLogPage     = 1_000_000
	maxLogPageSize = 1000
	logPageSize    = 50 // LiteLLM's default page_size
)

// hdrTotalCount is the number of logs an unpaged /spend/logs selects: when
// it is above the rows returned (spend.DefaultLogLimit), the answer was cut
// and page/page_size reach the rest.
const hdrTotalCount = "X-Total-Count"

// logPaging reads page and page_size into lq (Offset, Limit); paged is
// whether either was given (the answer is then LiteLLM's paged object).
func logPaging(q *query, lq *spend.LogQuery) (page, size int, paged bool) {
	paged = q.str("page") != "" || q.str("page_size") != ""
	if !paged {
		return 0, 0, false
	}
	page = q.int("page", 1, 1, maxLogPage)
	size = q.int("page_size", logPageSize, 1, maxLogPageSize)
	lq.Offset, lq.Limit = (page-1)*size, size
	return page, size, true
}

// writeLogs answers /spend/logs: LiteLLM's paged object ({data, total,
// page, page_size, total_pages}) when paged, else the bare list LiteLLM's
// /spend/logs returns, with the total in hdrTotalCount.
func writeLogs(w http.ResponseWriter, p spend.LogPage, aliases map[string]string, page, size int, paged bool) error {
	out := make([]obj, 0, len(p.Logs))
	for i := range p.Logs {
		out = append(out, logObject(&p.Logs[i], aliases))
	}
	if !paged {
		w.Header().Set(hdrTotalCount, strconv.Itoa(p.Total))
		return ok(w, out)
	}
	return ok(w, obj{"data": out, "total": p.Total, "page": page, "page_size": size, "total_pages": (p.Total + size - 1) / size})
}
