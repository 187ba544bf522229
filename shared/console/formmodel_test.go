package console

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFormModel runs the console's JavaScript unit tests (jstest/*.test.mjs:
// the form model's pure parts, static/form.js and static/specs.js) with
// node --test. They are fast, so -short runs
// them too; without node they skip, unless CI is set (then they fail).
func TestFormModel(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		const msg = "no node on the PATH (./test/run.sh installs npm, which brings node)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set: the console's unit tests must run)")
		}
		t.Skip(msg)
	}
	files, err := filepath.Glob(filepath.Join("jstest", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no jstest/*.test.mjs files: %v", err)
	}
	out, err := exec.Command(node, append([]string{"--test", "--test-reporter=tap"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %v: %v\n%s", files, err, out)
	}
	t.Logf("%s", out)
}
