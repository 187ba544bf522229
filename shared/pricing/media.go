package pricing

import (
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// The prices of calls not billed per token: images (per image, or per
// pixel for LiteLLM's "{quality}/{W}-x-{H}/{model}" entries), speech (per
// input character), transcriptions (per second of audio) and moderations
// (free at OpenAI) and reranks (per query, a search unit). They are read from the same LiteLLM price map format;
// the embedded table holds OpenAI's models, with LiteLLM's values.

// Media is a media model's price in USD; zero fields are not priced that
// way.
type Media struct {
	PerImage     float64 // input_cost_per_image, else output_cost_per_image
	PerPixel     float64 // input_cost_per_pixel (LiteLLM's dall-e entries)
	PerCharacter float64 // input_cost_per_character (speech)
	PerSecond    float64 // input_cost_per_second (transcriptions)
	PerQuery     float64 // input_cost_per_query (rerank: per search unit)
	Free         bool    // priced at 0 per token (moderations)
}

// MediaTable is a table of media prices by LiteLLM's model key.
type MediaTable struct {
	m     map[string]Media
	sized map[string]bool // models priced by size ("{quality}/{W}-x-{H}/{model}")
}

//go:embed media.json
var mediaJSON []byte

var defaultMedia = sync.OnceValue(func() *MediaTable {
	t, err := ParseMedia(mediaJSON)
	if err != nil {
		panic(err) // the embedded file is tested
	}
	return t
})

// DefaultMedia returns the embedded media price table (parsed on first use:
// no cold-start cost for a gateway that serves chat only).
func DefaultMedia() *MediaTable { return defaultMedia() }

// ParseMedia reads the media prices of a LiteLLM price map: the entries with
// a per-image, per-pixel, per-character or per-second input price, and the
// moderation models. Other entries are left out.
func ParseMedia(data []byte) (*MediaTable, error) {
	if !gjson.ValidBytes(data) {
		return nil, fmt.Errorf("media price table: invalid JSON")
	}
	t := &MediaTable{m: map[string]Media{}, sized: map[string]bool{}}
	gjson.ParseBytes(data).ForEach(func(name, v gjson.Result) bool {
		if !v.IsObject() {
			return true
		}
		var m Media
		var ok bool
		if f, has := number(v.Get("input_cost_per_image")); has {
			m.PerImage, ok = f, true
		} else if f, has := number(v.Get("output_cost_per_image")); has {
			m.PerImage, ok = f, true
		}
		if f, has := number(v.Get("input_cost_per_pixel")); has {
			m.PerPixel, ok = f, true
		}
		if f, has := number(v.Get("input_cost_per_character")); has {
			m.PerCharacter, ok = f, true
		}
		if f, has := number(v.Get("input_cost_per_second")); has {
			m.PerSecond, ok = f, true
		}
		if f, has := number(v.Get("input_cost_per_query")); has {
			m.PerQuery, ok = f, true
		}
		if mode := v.Get("mode").Str; mode == "moderation" || mode == "moderations" {
			m.Free, ok = true, true
		}
		if ok {
			t.m[name.Str] = m
			if i := strings.Index(name.Str, "-x-"); i > 0 {
				if j := strings.IndexByte(name.Str[i:], '/'); j > 0 {
					t.sized[name.Str[i+j+1:]] = true
				}
			}
		}
		return true
	})
	return t, nil
}

// Lookup returns model's media price.
func (t *MediaTable) Lookup(model string) (Media, bool) {
	if t == nil {
		return Media{}, false
	}
	m, ok := t.m[model]
	return m, ok
}

// Media reports whether model is a media model of the table: priced per
// image, pixel, character or second, or a moderation model.
func (t *MediaTable) Media(model string) bool {
	if t == nil {
		return false
	}
	_, ok := t.m[model]
	return ok || t.sized[model]
}

// ImageCostNanos is the cost of n images of size ("1024x1024"; "" is
// 1024x1024) and quality ("" is "standard") from model, looked up as
// LiteLLM does: "{quality}/{W}-x-{H}/{model}", then "{W}-x-{H}/{model}",
// then "{model}". ok is false when no entry prices it.
func (t *MediaTable) ImageCostNanos(model, size, quality string, n int64) (int64, bool) {
	if size == "" || size == "auto" {
		size = "1024x1024"
	}
	if quality == "" || quality == "auto" {
		quality = "standard"
	}
	w, h, _ := strings.Cut(size, "x")
	pw, errW := strconv.Atoi(w)
	ph, errH := strconv.Atoi(h)
	key := w + "-x-" + h + "/" + model
	m, ok := t.Lookup(quality + "/" + key)
	if !ok {
		m, ok = t.Lookup(key)
	}
	if !ok {
		m, ok = t.Lookup(model)
	}
	if !ok {
		return 0, false
	}
	per := m.PerImage
	if per == 0 && m.PerPixel > 0 {
		if errW != nil || errH != nil {
			return 0, false
		}
		per = m.PerPixel * float64(pw) * float64(ph)
	}
	if per == 0 && !m.Free && m.PerPixel == 0 {
		return 0, false
	}
	return nanos(per * float64(max(n, 1))), true
}

// nanos is usd in nano-USD, rounded, capped at MaxInt64 and never negative.
func nanos(usd float64) int64 {
	n := math.Round(usd * NanosPerUSD)
	switch {
	case n >= math.MaxInt64 || math.IsNaN(n):
		return math.MaxInt64
	case n <= 0:
		return 0
	}
	return int64(n)
}

// NanosOf is the cost of units (characters, seconds) at per USD each.
func NanosOf(per, units float64) int64 { return nanos(per * max(units, 0)) }
