// Command check validates the cluster examples offline: the Kubernetes Job
// is decoded strictly into the Kubernetes API's own types (an unknown or
// misspelt field is an error) and checked for what sessiond exec needs of
// it; the Nomad job is parsed as HCL and checked likewise; the Dockerfile
// must use sessiond exec as its entrypoint.
//
// It is a module of its own so that sessiond's go.mod carries none of the
// Kubernetes or HCL dependencies. Usage: go run . DIR (the examples' dir).
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// stopBudget is the default stop_grace plus sessiond exec's margin: the
// scheduler's kill delay must exceed it for the handoff to be written.
const stopBudget = 35 * time.Second

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: check DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	var errs []error
	for name, check := range map[string]func([]byte) error{
		"job.yaml": checkJob, "nomad.hcl": checkNomad, "Dockerfile": checkDockerfile,
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = check(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		} else {
			fmt.Println("ok", name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func checkJob(data []byte) error {
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		return err
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		return fmt.Errorf("want apiVersion batch/v1, kind Job; got %s, %s", job.APIVersion, job.Kind)
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever && pod.RestartPolicy != corev1.RestartPolicyOnFailure {
		return fmt.Errorf("restartPolicy %q: a Job wants Never or OnFailure", pod.RestartPolicy)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= stopBudget {
		return fmt.Errorf("terminationGracePeriodSeconds must exceed %s (stop_grace and the handoff)", stopBudget)
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Image == "" {
		return errors.New("want one container with an image")
	}
	if job.Spec.ActiveDeadlineSeconds == nil {
		return errors.New("no activeDeadlineSeconds")
	}
	want := strconv.FormatInt(*job.Spec.ActiveDeadlineSeconds, 10)
	for _, e := range pod.Containers[0].Env {
		if e.Name == "SESSION_DEADLINE_SECONDS" {
			if e.Value != want {
				return fmt.Errorf("SESSION_DEADLINE_SECONDS = %q, want activeDeadlineSeconds %s", e.Value, want)
			}
			return nil
		}
	}
	return errors.New("no SESSION_DEADLINE_SECONDS in the container's env")
}

func checkNomad(data []byte) error {
	f, diags := hclsyntax.ParseConfig(data, "nomad.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		return diags
	}
	body := f.Body.(*hclsyntax.Body)
	job := block(body, "job")
	if job == nil {
		return errors.New("no job block")
	}
	if v := attr(job.Body, "type"); v != "batch" {
		return fmt.Errorf("job type %q, want batch", v)
	}
	group := block(job.Body, "group")
	if group == nil {
		return errors.New("no group block")
	}
	task := block(group.Body, "task")
	if task == nil {
		return errors.New("no task block")
	}
	kt, err := time.ParseDuration(attr(task.Body, "kill_timeout"))
	if err != nil || kt <= stopBudget {
		return fmt.Errorf("kill_timeout must exceed %s (stop_grace and the handoff)", stopBudget)
	}
	if block(task.Body, "config") == nil {
		return errors.New("task has no config block")
	}
	return nil
}

func block(b *hclsyntax.Body, typ string) *hclsyntax.Block {
	for _, bl := range b.Blocks {
		if bl.Type == typ {
			return bl
		}
	}
	return nil
}

func attr(b *hclsyntax.Body, name string) string {
	a, ok := b.Attributes[name]
	if !ok {
		return ""
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.IsNull() || v.Type().FriendlyName() != "string" {
		return ""
	}
	return v.AsString()
}

func checkDockerfile(data []byte) error {
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "ENTRYPOINT ") {
			if !strings.Contains(line, `"sessiond", "exec"`) {
				return fmt.Errorf("the entrypoint is not sessiond exec: %s", line)
			}
			return nil
		}
	}
	return errors.New("no ENTRYPOINT")
}
