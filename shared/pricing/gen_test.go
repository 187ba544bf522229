package pricing

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// genFile is the generated form of the embedded table (defaultGen): one
// line a model, read by parseGen.
const genFile = "prices_gen.tsv"

// TestPricesGen checks that prices_gen.tsv is prices.json parsed, as Parse
// reads it; with SLUICE_GEN=1 (go generate ./shared/pricing) it writes the
// file instead.
func TestPricesGen(t *testing.T) {
	want, err := Parse(defaultJSON)
	if err != nil {
		t.Fatal(err)
	}
	src := genSource(t, want)
	if os.Getenv("SLUICE_GEN") == "1" {
		if err := os.WriteFile(genFile, src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(genFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, src) {
		t.Errorf("%s is not prices.json as Parse reads it: run go generate ./shared/pricing", genFile)
	}
	if got := Default(); !reflect.DeepEqual(asMap(got), want.m) || !slices.IsSortedFunc(got.sorted, func(a, b entry) int { return strings.Compare(a.name, b.name) }) {
		t.Errorf("Default() has %d models, Parse(prices.json) %d, or their prices differ", got.Len(), want.Len())
	}
}

// asMap is a table's entries as a map, whichever way it holds them.
func asMap(t *Table) map[string]Price {
	if t.m != nil {
		return t.m
	}
	m := make(map[string]Price, len(t.sorted))
	for _, e := range t.sorted {
		m[e.name] = e.price
	}
	return m
}

// genSource is the text of prices_gen.tsv holding t's entries, sorted by
// name: a line a model, its name and Price's fields in order, separated by
// tabs; floats in their shortest form that reads back exactly.
func genSource(t *testing.T, tab *Table) []byte {
	t.Helper()
	names := make([]string, 0, len(tab.m))
	for n := range tab.m {
		if strings.ContainsAny(n, "\t\n") {
			t.Fatalf("model name %q holds a tab or a newline: prices_gen.tsv cannot hold it", n)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var b bytes.Buffer
	for _, n := range names {
		p := tab.m[n]
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n",
			n, f(p.Input), f(p.Output), f(p.CacheRead), f(p.CacheWrite), p.MaxInput, p.MaxOutput)
	}
	return b.Bytes()
}

// TestGenEntry: a line of prices_gen.tsv reads back as the entry it was
// written from; a line with a field missing, one too many or a number
// that is not one is refused (parseGen panics on it at start).
func TestGenEntry(t *testing.T) {
	got, err := genEntry("m\t1e-06\t2e-06\t3e-07\t0\t128000\t4096")
	want := entry{name: "m", price: Price{Input: 1e-06, Output: 2e-06, CacheRead: 3e-07, MaxInput: 128000, MaxOutput: 4096}}
	if err != nil || got != want {
		t.Errorf("genEntry = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "m\t1\t2\t3\t4\t5", "m\t1\t2\t3\t4\t5\t6\t7", "m\tx\t2\t3\t4\t5\t6", "m\t1\t2\t3\t4\t5\t6.5"} {
		if _, err := genEntry(bad); err == nil {
			t.Errorf("genEntry(%q) accepted", bad)
		}
	}
}

// BenchmarkParseGen is what a cold start pays for the embedded table.
func BenchmarkParseGen(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if len(parseGen(defaultGen)) == 0 {
			b.Fatal("no entries")
		}
	}
}
