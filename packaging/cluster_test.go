package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterExamples validates the container and cluster examples offline
// (the Kubernetes Job against the Kubernetes API types, the Nomad job as
// HCL, the Dockerfile's entrypoint), shows that the check catches a
// misspelt field, and that docs/cluster.md shows the files as they are.
func TestClusterExamples(t *testing.T) {
	check := func(dir string) (string, error) {
		cmd := exec.Command("go", "run", ".", dir)
		cmd.Dir = filepath.Join("cluster", "check")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	abs, err := filepath.Abs("cluster")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := check(abs); err != nil {
		t.Fatalf("the examples do not pass the check: %v\n%s", err, out)
	}

	bad := t.TempDir()
	for _, name := range []string{"job.yaml", "nomad.hcl", "Dockerfile"} {
		data, err := os.ReadFile(filepath.Join("cluster", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "job.yaml" {
			data = []byte(strings.Replace(string(data), "restartPolicy: Never", "restartPolicy: Never\n      restartPolicyy: Never", 1))
		}
		if err := os.WriteFile(filepath.Join(bad, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := check(bad); err == nil || !strings.Contains(out, "restartPolicyy") {
		t.Errorf("a misspelt field passed the check: %v\n%s", err, out)
	}

	doc, err := os.ReadFile(filepath.Join("..", "docs", "cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"job.yaml", "nomad.hcl", "Dockerfile"} {
		data, _ := os.ReadFile(filepath.Join("cluster", name))
		if !strings.Contains(string(doc), string(data)) {
			t.Errorf("docs/cluster.md does not show packaging/cluster/%s as it is", name)
		}
	}
}
