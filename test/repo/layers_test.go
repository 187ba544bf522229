package repo

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoImportRunsBackUp fails when a package imports a package from
// below another package that itself depends on the importer: config once
// imported providers/catalog while providers imports config, so the
// provider table sat "inside" a package above its own user. A table both
// sides need lives in a leaf of its own (shared/catalog).
func TestNoImportRunsBackUp(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"/") {
				imports[f[0]] = append(imports[f[0]], imp)
			}
		}
		if _, ok := imports[f[0]]; !ok {
			imports[f[0]] = nil
		}
	}
	if len(imports) < 20 {
		t.Fatalf("go list found %d packages: the check would see nothing", len(imports))
	}
	// dependsOn reports whether p reaches q through the module's imports.
	memo := map[[2]string]bool{}
	var dependsOn func(p, q string, seen map[string]bool) bool
	dependsOn = func(p, q string, seen map[string]bool) bool {
		if v, ok := memo[[2]string{p, q}]; ok {
			return v
		}
		if seen[p] {
			return false
		}
		seen[p] = true
		for _, imp := range imports[p] {
			if imp == q || dependsOn(imp, q, seen) {
				memo[[2]string{p, q}] = true
				return true
			}
		}
		return false
	}
	for a, deps := range imports {
		for _, c := range deps {
			for p := c; ; {
				i := strings.LastIndexByte(p, '/')
				if i <= len(module) {
					break
				}
				p = p[:i]
				if _, isPkg := imports[p]; !isPkg || p == a || strings.HasPrefix(a, p+"/") {
					continue
				}
				if dependsOn(p, a, map[string]bool{}) {
					t.Errorf("%s imports %s, below %s, which depends on %[1]s: move %[2]s to a leaf package", a, c, p)
				}
			}
		}
	}
}
