package state_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sessiond/sessiond/daemon/state"
)

// ExampleSaveSessionState saves a project's session state, loads it back,
// prints the restore summary and clears it, as the seed's programmatic usage
// does.
func ExampleSaveSessionState() {
	project, err := os.MkdirTemp("", "project")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(project)
	now := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)

	err = state.SaveSessionState(project, &state.SessionState{
		LastSession: &state.LastSession{
			Summary:        "Completed Task #27, Task #28",
			CompletedTasks: []state.TaskID{state.IntTaskID(27), state.IntTaskID(28)},
			Timestamp:      now.Add(-2 * time.Hour),
		},
		NextActions: []string{"Fix validation (Task #29)"},
		CurrentPlan: "Build API",
		ProgressPct: 50.0,
	})
	if err != nil {
		log.Fatal(err)
	}

	s, err := state.LoadSessionState(project)
	if err != nil {
		log.Fatal(err) // a corrupt file: errors.Is(err, state.ErrCorrupt), and s is nil
	}
	fmt.Printf("Last session: %s\n", s.LastSession.Summary)
	fmt.Printf("Progress: %v%%\n\n", s.ProgressPct)
	fmt.Print(state.RestoreSummary(s, now))

	if err := state.ClearSessionState(project); err != nil {
		log.Fatal(err)
	}
	s, err = state.LoadSessionState(project)
	fmt.Println(s == nil, err)
	fmt.Print(state.RestoreSummary(s, now))
	// Output:
	// Last session: Completed Task #27, Task #28
	// Progress: 50%
	//
	// 📋 Restoring session...
	//
	// Last Session:
	//   Summary: Completed Task #27, Task #28
	//   Time: 2 hours ago
	//
	// Next Actions:
	//   1. Fix validation (Task #29)
	//
	// Progress: 50%
	// Blockers: None
	// true <nil>
	// 🚀 Starting new session...
}
