package logfile_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sessiond/sessiond/daemon/logfile"
)

// The daemon's side of a session log: the child writes into a descriptor
// of its own, the Log keeps the files under the cap, and readers see one
// stream across the rotated files.
func Example() {
	dir, _ := os.MkdirTemp("", "session")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "output.log")

	out, err := logfile.OpenAppend(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	child := exec.Command("seq", "100000")
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		fmt.Println(err)
		return
	}
	out.Close() // the child has its own copy

	l, err := logfile.Open(path, logfile.Options{MaxSize: 64 << 10, Keep: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	child.Wait()
	// The daemon calls l.Notify on each inotify write event of the log;
	// here one pass after the child is done does the same.
	if err := l.Rotate(); err != nil {
		fmt.Println(err)
		return
	}
	last, _ := l.TailLines(3, 4096)
	fmt.Println(last)
	_, err = os.Stat(l.RotatedPath(2))
	fmt.Println("output.log.2 exists:", err == nil)
	// Output:
	// [99998 99999 100000]
	// output.log.2 exists: true
}
