package gateway_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
)

// The fault matrix with bedrock/ deployments in front of fake Bedrock
// runtimes (real eventstream frames): primary (p1, p2), its general
// fallback backup (b1) and its context-window fallback long (l1).

const bedrockFaultConfig = `
model_list:
  - model_name: primary
    litellm_params: {model: bedrock/converse/us.anthropic.claude-primary-v1:0, api_base: "%[1]s", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake, timeout: 1.5}
    model_info: {id: p1}
  - model_name: primary
    litellm_params: {model: bedrock/us.anthropic.claude-primary-v1:0, api_base: "%[2]s", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake, timeout: 1.5}
    model_info: {id: p2}
  - model_name: backup
    litellm_params: {model: bedrock/anthropic.claude-backup-v1:0, api_base: "%[3]s", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake}
    model_info: {id: b1}
  - model_name: long
    litellm_params: {model: bedrock/anthropic.claude-long-v1:0, api_base: "%[4]s", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake}
    model_info: {id: l1}
router_settings:
  num_retries: 1
  fallbacks: [{primary: [backup]}]
  context_window_fallbacks: [{primary: [long]}]
`

type bedrockFakes map[string]*bedrocktest.Server

// calls lists the deployments called, in order of their first call
// per fake (each fake counts its own; the order across fakes follows ids).
func (f bedrockFakes) count() map[string]int {
	out := map[string]int{}
	for id, s := range f {
		if n := len(s.Calls()); n > 0 {
			out[id] = n
		}
	}
	return out
}

func bedrockFaultGateway(t *testing.T) (*gateway.Handler, bedrockFakes) {
	t.Helper()
	fakes := bedrockFakes{}
	for _, id := range []string{"p1", "p2", "b1", "l1"} {
		s := bedrocktest.New(id)
		t.Cleanup(s.Close)
		fakes[id] = s
	}
	yaml := fmt.Sprintf(bedrockFaultConfig, fakes["p1"].URL, fakes["p2"].URL, fakes["b1"].URL, fakes["l1"].URL)
	return faultHandler(t, yaml, nil), fakes
}

func TestFaultMatrixBedrock(t *testing.T) {
	type want struct {
		calls        map[string]int
		served       string // the deployment that answered; "" = broken stream
		retries, fbs string
	}
	retried := want{map[string]int{"p1": 1, "p2": 1, "b1": 1}, "b1", "1", "1"}
	for _, tc := range []struct {
		fault  bedrocktest.Fault
		stream bool
		want   want
	}{
		{bedrocktest.Throttle, false, retried},
		{bedrocktest.Throttle, true, retried},
		{bedrocktest.ThrottleFirstFrame, true, retried},
		{bedrocktest.Unavailable, false, retried},
		{bedrocktest.Internal, true, retried},
		{bedrocktest.ModelTimeout, false, retried},
		{bedrocktest.Hang, false, retried},
		{bedrocktest.Hang, true, retried},
		{bedrocktest.TooLong, false, want{map[string]int{"p1": 1, "l1": 1}, "l1", "0", "1"}},
		{bedrocktest.TooLong, true, want{map[string]int{"p1": 1, "l1": 1}, "l1", "0", "1"}},
		{bedrocktest.CutAfterContent, false, retried},
		{bedrocktest.BreakAfterContent, true, want{map[string]int{"p1": 1}, "", "0", "0"}},
		{bedrocktest.CutAfterContent, true, want{map[string]int{"p1": 1}, "", "0", "0"}},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", tc.fault, tc.stream), func(t *testing.T) {
			h, fakes := bedrockFaultGateway(t)
			fakes["p1"].SetFault(tc.fault)
			fakes["p2"].SetFault(tc.fault)
			rep := call(t, h, fmt.Sprintf(`{"model":"primary","messages":[{"role":"user","content":"hi"}],"stream":%v}`, tc.stream))
			if got := fakes.count(); fmt.Sprint(got) != fmt.Sprint(tc.want.calls) {
				t.Fatalf("calls %v, want %v", got, tc.want.calls)
			}
			if rep.status != 200 {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if tc.want.served == "" { // broken after content: no retry, no splice
				if rep.content() != "Hello " {
					t.Fatalf("content %q", rep.content())
				}
				final := rep.events[len(rep.events)-1]
				if gjson.Get(final, "error.code").String() != "stream_broken" {
					t.Fatalf("final event %s", final)
				}
				return
			}
			if rep.content() != "Hello from "+tc.want.served+"." {
				t.Fatalf("content %q: %s", rep.content(), rep.body)
			}
			if rep.header.Get("x-litellm-model-id") != tc.want.served || rep.header.Get("x-litellm-attempted-retries") != tc.want.retries ||
				rep.header.Get("x-litellm-attempted-fallbacks") != tc.want.fbs {
				t.Fatalf("headers %v", rep.header)
			}
			if tc.stream && rep.events[len(rep.events)-1] != "[DONE]" {
				t.Fatalf("final event %q", rep.events[len(rep.events)-1])
			}
		})
	}
}

// Without fallbacks the client gets the status Bedrock's error stands for,
// also when the exception is a stream's first frame.
func TestFaultBedrockStatuses(t *testing.T) {
	runStatuses(t, func(t *testing.T) (http.Handler, func(bedrocktest.Fault)) {
		h, fakes := bedrockFaultGateway(t)
		return h, func(f bedrocktest.Fault) { fakes["p1"].SetFault(f); fakes["p2"].SetFault(f) }
	}, []statusCase[bedrocktest.Fault]{
		{bedrocktest.Throttle, false, 429, "upstream_rate_limited"},
		{bedrocktest.ThrottleFirstFrame, true, 429, "upstream_rate_limited"},
		{bedrocktest.TooLong, true, 400, "context_length_exceeded"},
		{bedrocktest.Unavailable, false, 503, "upstream_server_error"},
		{bedrocktest.AccessDenied, true, 502, "upstream_auth_error"},
		{bedrocktest.ModelTimeout, false, 504, "upstream_timeout"},
	})
}
