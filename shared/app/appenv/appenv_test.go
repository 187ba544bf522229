package appenv_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/app/appenv"
)

func TestLambdaProcs(t *testing.T) {
	for _, c := range []struct {
		memory string
		cpus   int
		want   int
	}{
		{"128", 2, 1},
		{"256", 2, 1},   // the template's default: 0.145 vCPU of time
		{"1769", 2, 1},  // one vCPU
		{"3538", 2, 2},  // two
		{"3537", 2, 1},  // not yet two
		{"10240", 6, 5}, // Lambda's largest: 5.8 vCPUs of time on 6
		{"10240", 4, 4}, // never more than the CPUs shown
		{"", 2, 2},      // unknown: the runtime's default
		{"lots", 2, 2},
		{"-1", 2, 2},
	} {
		if got := appenv.LambdaProcs(c.memory, c.cpus); got != c.want {
			t.Errorf("LambdaProcs(%q, %d) = %d, want %d", c.memory, c.cpus, got, c.want)
		}
	}
}
