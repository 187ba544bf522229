package stack_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// compose is the part of localstack/docker-compose.yml the test reads.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "localstack", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("localstack/docker-compose.yml: %v", err)
	}
	if _, ok := c.Services["localstack"]; !ok {
		t.Fatal("localstack/docker-compose.yml has no localstack service")
	}
	return c
}

// ssmPut is one `awslocal ssm put-parameter` of an init script.
type ssmPut struct {
	script, name, typ, value string
	overwrite                bool
}

// initCommands reads the init scripts docker-compose.yml mounts into
// LocalStack's ready.d (run in name order once LocalStack is ready) as the
// SSM parameters they put, expanding variables from the container's
// environment (the compose file's `environment`). Any other command is an
// error: the test must do what they do.
func initCommands(t *testing.T) []ssmPut {
	t.Helper()
	svc := readCompose(t).Services["localstack"]
	var hostDir string
	for _, v := range svc.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[1], "/etc/localstack/init/ready.d") {
			hostDir = parts[0]
		}
	}
	if hostDir == "" {
		t.Fatal("localstack/docker-compose.yml mounts no init scripts into /etc/localstack/init/ready.d")
	}
	dir := filepath.Join(repoRoot(t), "localstack", filepath.FromSlash(hostDir))
	files, _ := filepath.Glob(filepath.Join(dir, "*.sh"))
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no init scripts in %s", dir)
	}
	lookup := func(name string) (string, bool) {
		v, ok := svc.Environment[name]
		return v, ok
	}
	var out []ssmPut
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := parseShell(string(b), lookup)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cmds {
			a := c.args
			switch {
			case a[0] == "set" || a[0] == "echo":
				continue
			case len(a) >= 3 && a[0] == "awslocal" && a[1] == "ssm" && a[2] == "put-parameter":
				p := ssmPut{script: filepath.Base(f)}
				for i := 3; i < len(a); i++ {
					switch a[i] {
					case "--overwrite":
						p.overwrite = true
						continue
					case "--name", "--type", "--value":
					default:
						t.Fatalf("%s: %q: the test does not know what %s does", f, c, a[i])
					}
					if i+1 >= len(a) {
						t.Fatalf("%s: %s without a value", f, a[i])
					}
					switch a[i] {
					case "--name":
						p.name = a[i+1]
					case "--type":
						p.typ = a[i+1]
					case "--value":
						p.value = a[i+1]
					}
					i++
				}
				out = append(out, p)
			default:
				t.Fatalf("%s: %q: the whole-stack test does not perform this command: teach it (readme_compose_test.go)", f, c)
			}
		}
	}
	return out
}
