package bedrock_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
)

// Streams of one deployment at once share its client: each must decode
// its own events (the SDK's event-stream codec keeps a decoder and a
// payload buffer per protocol instance, which one client shares).
func TestConcurrentStreams(t *testing.T) {
	_, p, d := setup(t)
	const workers, each = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("%02d-%02d-%s", w, i, strings.Repeat("x", 40*w+i))
				body := fmt.Sprintf(`{"model":"claude","stream":true,"messages":[
{"role":"user","content":"weather?"},
{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
{"role":"tool","tool_call_id":"call_1","content":%q}]}`, id)
				resp, err := do(t, p, d, body, true)
				if err != nil {
					errs <- err
					continue
				}
				evs, err := chunkstest.Events(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- fmt.Errorf("stream %s: %w", id, err)
					continue
				}
				var text strings.Builder
				for _, ev := range evs {
					text.WriteString(gjson.Get(ev, "choices.0.delta.content").String())
				}
				if want := "It is " + id + " in Paris."; text.String() != want {
					errs <- fmt.Errorf("stream got %q, want %q", text.String(), want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
