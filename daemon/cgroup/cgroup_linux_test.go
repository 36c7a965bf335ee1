package cgroup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
)

// testHost is a Host of its own for t, swept and removed at its end.
func testHost(t *testing.T) *Host {
	t.Helper()
	h := Detect(Options{Name: fmt.Sprintf("sessiond-test-%d-%d", os.Getpid(), time.Now().UnixNano())})
	if !h.Enabled() {
		t.Skipf("no cgroup for sessions on this host: %s", h.Info().Why)
	}
	v1 := make(map[string]string, len(h.v1))
	for c, d := range h.v1 {
		v1[c] = d
	}
	t.Cleanup(func() {
		h.Sweep(context.Background(), func(string) bool { return false })
		_ = os.Remove(h.base)
		for _, d := range v1 {
			_ = os.Remove(d)
		}
	})
	return h
}

// startIn starts argv in g's command leaf, as the daemon does.
func startIn(t *testing.T, g *Group, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	err := g.Start(LeafCommand, func(fd int) error {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd}
		return cmd.Start()
	})
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestAChildIsBornInItsSessionsCgroups(t *testing.T) {
	h := testHost(t)
	g, _, err := h.New("s1", config.Limits{PidsMax: 64, Mode: config.LimitsBestEffort})
	if err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, g, "sleep", "100")
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "::"+strings.TrimPrefix(g.Dir(), h.mount)+"/"+LeafCommand+"\n") {
		t.Errorf("the child is not in %s/%s:\n%s", g.Dir(), LeafCommand, data)
	}
	for c, d := range g.Record().V1 {
		if !strings.Contains(string(data), strings.TrimPrefix(d, h.v1mount[c])+"\n") {
			t.Errorf("the child is not in the v1 %s cgroup %s:\n%s", c, d, data)
		}
	}
	// The daemon itself stays where it was.
	self, _ := os.ReadFile("/proc/self/cgroup")
	if strings.Contains(string(self), "/s1") {
		t.Errorf("the daemon entered the session's cgroup:\n%s", self)
	}
	if !g.Populated("") {
		t.Error("a group with a process is not populated")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if isDir(g.Dir()) {
		t.Errorf("%s is still there", g.Dir())
	}
}

func TestMemoryMaxEndsInAnOOMKillThatIsCounted(t *testing.T) {
	h := testHost(t)
	if h.Info().Controllers["memory"] == "" {
		t.Skip("no memory controller for sessions here")
	}
	g, _, err := h.New("oom", config.Limits{MemoryMax: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	cmd := startIn(t, g, "python3", "-c", "a=[]\nwhile True: a.append(bytearray(1<<20))")
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the allocation ended with %v, not SIGKILL", err)
	}
	m, ok := g.Memory()
	if !ok || m.OOMKills < 1 || m.PeakBytes < 16<<20 {
		t.Errorf("memory account %+v (known %v): want an OOM kill and a peak near 32 MiB", m, ok)
	}
}

// A session's v1 cgroup left behind by a daemon that died after removing
// its v2 one is swept at the next start.
func TestSweepRemovesWhatADeadDaemonLeft(t *testing.T) {
	h := testHost(t)
	if h.Info().Controllers["memory"] != "v1" {
		t.Skip("no v1 memory hierarchy here")
	}
	g, _, err := h.New("left", config.Limits{MemoryMax: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := h.New("live", config.Limits{MemoryMax: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	for _, d := range []string{g.Dir() + "/" + LeafCommand, g.Dir()} {
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	swept := h.Sweep(context.Background(), func(id string) bool { return id == "live" })
	if len(swept) != 1 || swept[0] != "left" {
		t.Errorf("swept %q, want [left]", swept)
	}
	if isDir(g.Record().V1["memory"]) {
		t.Errorf("the v1 cgroup %s is still there", g.Record().V1["memory"])
	}
	if !isDir(live.Dir()) || !isDir(live.Record().V1["memory"]) {
		t.Error("the live session's cgroups were swept")
	}
}

func TestALimitTheHostLacksIsAnErrorUnlessBestEffort(t *testing.T) {
	h := testHost(t)
	h.info.Controllers["memory"] = ""
	delete(h.v2, "memory")
	delete(h.v1, "memory")
	_, _, err := h.New("x", config.Limits{MemoryMax: 64 << 20})
	if err == nil || !strings.Contains(err.Error(), "memory_max") || !strings.Contains(err.Error(), "best-effort") {
		t.Fatalf("err = %v, want one naming memory_max and best-effort", err)
	}
	g, notices, err := h.New("y", config.Limits{MemoryMax: 64 << 20, Mode: config.LimitsBestEffort})
	if err != nil || len(notices) != 1 || !strings.Contains(notices[0], "memory_max not applied") {
		t.Fatalf("best-effort: err %v, notices %q", err, notices)
	}
	_ = g.Remove()
}

// BenchmarkSessionCgroup is what containment adds to one session: its
// cgroup made (with a memory and a pids limit), a process born in it, the
// kill, the wait until it is empty, the removal.
func BenchmarkSessionCgroup(b *testing.B) {
	h := Detect(Options{Name: fmt.Sprintf("sessiond-bench-%d", os.Getpid())})
	if !h.Enabled() {
		b.Skipf("no cgroup for sessions here: %s", h.Info().Why)
	}
	defer h.Close()
	l := config.Limits{MemoryMax: 256 << 20, PidsMax: 128, Mode: config.LimitsBestEffort}
	b.Run("make", func(b *testing.B) {
		for i := range b.N {
			g, _, err := h.New(fmt.Sprintf("m%d", i), l)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			_ = g.Remove()
			b.StartTimer()
		}
	})
	b.Run("spawn-into", func(b *testing.B) {
		g, _, err := h.New("spawn", l)
		if err != nil {
			b.Fatal(err)
		}
		defer g.Remove()
		for range b.N {
			cmd := exec.Command("/bin/true")
			if err := g.Start(LeafCommand, func(fd int) error {
				cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
				return cmd.Start()
			}); err != nil {
				b.Fatal(err)
			}
			_ = cmd.Wait()
		}
	})
	b.Run("spawn-plain", func(b *testing.B) {
		for range b.N {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// measure is what a listing reads of a live session's cgroup for its
	// CPU, MEM and process count.
	b.Run("measure", func(b *testing.B) {
		g, _, err := h.New("measure", l)
		if err != nil {
			b.Fatal(err)
		}
		defer g.Remove()
		cmd := exec.Command("sleep", "100")
		if err := g.Start(LeafCommand, func(fd int) error {
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
			return cmd.Start()
		}); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		if _, ok := g.MemoryNow(); ok && len(g.Procs("")) != 1 {
			b.Fatalf("procs %v, want the one sleep", g.Procs(""))
		}
		for b.Loop() {
			g.MemoryNow()
			g.CPU()
			g.Procs("")
		}
	})
	b.Run("end", func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			g, _, err := h.New(fmt.Sprintf("e%d", i), l)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			_ = g.Kill()
			if err := g.Wait(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := g.Remove(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
