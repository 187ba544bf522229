package pricing

import (
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// providerIndex is a table's models by LiteLLM provider (the entries'
// litellm_provider), as LiteLLM's models_by_provider: built from the
// table's text on first use (a wildcard deployment listed by /v1/models,
// a "*" deployment choosing its provider), never at start.
type providerIndex struct {
	once       sync.Once
	byModel    map[string]string   // model (the table's key) -> provider
	byProvider map[string][]string // provider -> its models, without a "provider/" prefix, sorted
}

func (t *Table) index() *providerIndex {
	if t == nil || t.idx == nil {
		return nil
	}
	x := t.idx
	x.once.Do(func() {
		x.byModel, x.byProvider = map[string]string{}, map[string][]string{}
		gjson.ParseBytes(t.src).ForEach(func(name, v gjson.Result) bool {
			p := v.Get("litellm_provider").Str
			if p == "" || name.Str == "sample_spec" {
				return true
			}
			x.byModel[name.Str] = p
			x.byProvider[p] = append(x.byProvider[p], strings.TrimPrefix(name.Str, p+"/"))
			return true
		})
		for p, ms := range x.byProvider {
			slices.Sort(ms)
			x.byProvider[p] = slices.Compact(ms)
		}
	})
	return x
}

// ProviderOf is the LiteLLM provider of model in the table ("" when the
// table does not know it), as "provider/model" or as model alone.
func (t *Table) ProviderOf(model string) string {
	x := t.index()
	if x == nil {
		return ""
	}
	return x.byModel[model]
}

// ModelsOf lists the models the table knows for provider, without the
// "provider/" prefix, sorted; the caller must not modify it.
func (t *Table) ModelsOf(provider string) []string {
	x := t.index()
	if x == nil {
		return nil
	}
	return x.byProvider[provider]
}
