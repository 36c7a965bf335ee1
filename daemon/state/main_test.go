package state

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves a goroutine behind: every
// operation with another user's identity runs on a goroutine of its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
