package session

import (
	"slices"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

func TestScreenTail(t *testing.T) {
	scr := ipc.TermScreen{Scrollback: []string{"one", "two"}, Lines: []string{"three", "", "four", "", "  "}}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{2, []string{"", "four"}},
		{3, []string{"three", "", "four"}},
		{20, []string{"one", "two", "three", "", "four"}},
	} {
		if got := screenTail(scr, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("screenTail(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := screenTail(ipc.TermScreen{Lines: []string{"", ""}}, 5); len(got) != 0 {
		t.Errorf("an empty screen's tail is %q", got)
	}
}

func TestRotatedKeep(t *testing.T) {
	// log_keep counts output.log; the holder counts only the rotated files.
	for logKeep, want := range map[int]int{0: 1, 1: 0, 2: 1, 5: 4} {
		if got := rotatedKeep(logKeep); got != want {
			t.Errorf("rotatedKeep(%d) = %d, want %d", logKeep, got, want)
		}
	}
}
