package spendapp_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/app/spendapp"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

// TestReplay: the consumer the spend function assembles from its settings
// (the tables named in the environment, the endpoint from the SDK's
// variables) records the events of a -replay file, once.
func TestReplay(t *testing.T) {
	ddblocal.Config(t) // skips in -short, or fails with instructions, without an emulator
	t.Setenv("AWS_ACCESS_KEY_ID", "dummy")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dummy")
	t.Setenv("AWS_REGION", ddblocal.Region)
	names := ddblocal.Tables(t)
	e1 := spendtest.Event(nil, "", time.Now(), 1000)
	e2 := spendtest.Event(nil, "end-user-1", time.Now(), 2000)
	file := filepath.Join(t.TempDir(), "lost.jsonl")
	if err := os.WriteFile(file, append(append(spend.Encode(&e1), '\n'), append(spend.Encode(&e2), '\n')...), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KEYS_TABLE": names.Keys, "SPEND_TABLE": names.Spend, "COUNTERS_TABLE": names.Counters}
	e, err := appenv.Read(appenv.Spend, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, []string{"spend", "-replay", file})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := spendapp.Build(ctx, e, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second replay finds both recorded
		if err := a.Replay(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range []spend.Event{e1, e2} {
		logs, err := a.Store.Logs(ctx, spend.LogQuery{RequestID: ev.RequestID})
		if err != nil || len(logs) != 1 || logs[0].EndUser != ev.EndUser {
			t.Errorf("%s: %+v, %v", ev.RequestID, logs, err)
		}
	}
}
