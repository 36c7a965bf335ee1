package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestChildrenOf: the children of this process, from every thread's
// children file, include processes it started and not others.
func TestChildrenOf(t *testing.T) {
	var cmds []*exec.Cmd
	for range 3 {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	got := childrenOf(os.Getpid())
	for _, c := range cmds {
		if !slices.Contains(got, c.Process.Pid) {
			t.Errorf("childrenOf(self) = %v, lacks %d", got, c.Process.Pid)
		}
	}
	if slices.Contains(got, os.Getpid()) || slices.Contains(got, os.Getppid()) {
		t.Errorf("childrenOf(self) = %v holds this process or its parent", got)
	}
}

func TestAppendPIDs(t *testing.T) {
	for in, want := range map[string][]int{
		"":             nil,
		"12 ":          {12},
		"12 345 6789 ": {12, 345, 6789},
		"1 2":          {1, 2},
		"4194304 7\n":  {4194304, 7},
		" 10  20 ":     {10, 20},
	} {
		if got := appendPIDs(nil, []byte(in)); !slices.Equal(got, want) {
			t.Errorf("appendPIDs(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestReadFD: a file longer than the buffer is read whole.
func TestReadFD(t *testing.T) {
	want := make([]byte, 10000)
	for i := range want {
		want[i] = byte('0' + i%10)
	}
	path := t.TempDir() + "/f"
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := readFD(int(f.Fd()), make([]byte, 0, 16)); string(got) != string(want) {
		t.Errorf("readFD read %d bytes, want %d", len(got), len(want))
	}
}
