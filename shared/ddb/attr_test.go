package ddb_test

import (
	"math"
	"slices"
	"testing"

	"github.com/sluice-gw/sluice/shared/ddb"
)

func TestAttrRoundTrip(t *testing.T) {
	it := ddb.PK("key#1")
	it["s"], it["n"], it["f"], it["b"], it["l"] = ddb.S("x"), ddb.N(math.MaxInt64), ddb.F(0.1), ddb.Bool(true), ddb.List([]string{"a", "b"})
	if got := ddb.String(it, "pk"); got != "key#1" {
		t.Errorf("pk = %q", got)
	}
	if got := ddb.String(it, "s"); got != "x" {
		t.Errorf("s = %q", got)
	}
	if v, ok := ddb.Int(it, "n"); !ok || v != math.MaxInt64 {
		t.Errorf("n = %d, %v", v, ok)
	}
	if v, ok := ddb.Float(it, "f"); !ok || v != 0.1 {
		t.Errorf("f = %v, %v", v, ok)
	}
	if !ddb.BoolOf(it, "b") || ddb.BoolOf(it, "missing") {
		t.Error("BoolOf")
	}
	if got := ddb.Strings(it, "l"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("l = %q", got)
	}
	// Absent or of another type: the zero value, not ok.
	if v, ok := ddb.Int(it, "s"); ok || v != 0 || ddb.Int0(it, "missing") != 0 {
		t.Errorf("Int of a string = %d, %v", v, ok)
	}
	if _, ok := ddb.Float(it, "s"); ok {
		t.Error("Float of a string is ok")
	}
	if ddb.String(it, "n") != "" || ddb.Strings(it, "s") != nil {
		t.Error("String of a number or Strings of a string is not empty")
	}
	it["big"] = ddb.F(1e300)
	if _, ok := ddb.Int(it, "big"); ok {
		t.Error("Int of 1e300 is ok")
	}
}
