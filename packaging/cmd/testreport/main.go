// Command testreport runs go test with the arguments it is given and prints
// what go test prints without -v — each package's result, and the output
// of each failed test — and also every skipped test with its reason, which
// go test alone keeps to -v. It exits as go test did. make test runs the
// suite through it, so that a test this machine cannot run says so.
//
//	go run ./packaging/cmd/testreport -race -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	goCmd := os.Getenv("GO") // make's $(GO)
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	skipped := report(out, os.Stdout)
	err = cmd.Wait()
	if len(skipped) > 0 {
		fmt.Printf("\n%d skipped (the reason is above each):\n", len(skipped))
		for _, s := range skipped {
			fmt.Println("  " + s)
		}
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

// unfinishedLines bounds what is shown of a test its package's failure
// ended: a timeout's goroutine dump runs to thousands of lines, and its
// head says which tests ran and why the package stopped.
const unfinishedLines = 60

// printUnfinished shows the output of test, which was running when pkg
// failed.
func printUnfinished(w io.Writer, test, pkg string, out []string) {
	fmt.Fprintf(w, "--- UNFINISHED: %s (running when %s failed)\n", test, pkg)
	fmt.Fprint(w, strings.Join(out[:min(len(out), unfinishedLines)], ""))
	if n := len(out) - unfinishedLines; n > 0 {
		fmt.Fprintf(w, "    ... %d more lines\n", n)
	}
}

// report copies the events of r to w as go test would print them, plus
// the skipped tests, whose names it returns.
func report(r io.Reader, w io.Writer) (skipped []string) {
	held := map[string][]string{} // a running test's output, by package and name
	var running []string          // the keys of held, in the order the tests began
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// Not an event (a build's own words): as it is.
			fmt.Fprintln(w, sc.Text())
			continue
		}
		key := ev.Package + "\x00" + ev.Test
		switch {
		case ev.Action == "build-output":
			fmt.Fprint(w, ev.Output)
		case ev.Test == "" && ev.Action == "output":
			if ev.Output != "PASS\n" { // -v's own, before the package's ok
				fmt.Fprint(w, ev.Output)
			}
		case ev.Action == "output":
			if strings.HasPrefix(ev.Output, "=== ") {
				continue // RUN, PAUSE, CONT, NAME: -v's own
			}
			if _, ok := held[key]; !ok {
				running = append(running, key)
			}
			if len(held[key]) < 10000 {
				held[key] = append(held[key], ev.Output)
			}
		case ev.Action == "fail" && ev.Test == "":
			// A package that failed as a whole (a timeout, a crash) ends
			// the tests it was running without an end of their own: what
			// they wrote, the panic among it, is the only word of why.
			for _, k := range running {
				if out, ok := held[k]; ok && strings.HasPrefix(k, ev.Package+"\x00") {
					printUnfinished(w, k[len(ev.Package)+1:], ev.Package, out)
					delete(held, k)
				}
			}
		case ev.Action == "fail":
			fmt.Fprint(w, strings.Join(held[key], ""))
			delete(held, key)
		case ev.Action == "skip" && ev.Test != "":
			fmt.Fprint(w, ev.Package+": "+strings.Join(held[key], ""))
			skipped = append(skipped, ev.Package+" "+ev.Test)
			delete(held, key)
		case ev.Action == "pass":
			delete(held, key)
		}
	}
	return skipped
}
