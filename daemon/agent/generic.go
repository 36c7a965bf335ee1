package agent

import (
	"context"
	"fmt"
	"slices"
)

// Generic is the adapter of any command sessiond does not know: it runs the
// command untouched, hears nothing from it, and its state stays unknown.
var Generic Adapter = generic{}

func init() { register(Generic) }

type generic struct{}

func (generic) Name() string { return "generic" }

func (generic) Interactive([]string) bool { return false }

func (g generic) Prepare(_ context.Context, l Launch) (Plan, error) {
	if len(l.Argv) == 0 {
		return Plan{}, fmt.Errorf("%w: no command", ErrBadLaunch)
	}
	p := Plan{Agent: g.Name(), Argv: slices.Clone(l.Argv), InitialState: StateUnknown}
	if l.Resume != "" {
		p.Notices = append(p.Notices, fmt.Sprintf("conversation %s is not resumed: sessiond does not know how to resume %s", l.Resume, executableName(l.Argv[0])))
	}
	return p, nil
}

func (generic) Resume([]string, string) ([]string, error) {
	return nil, fmt.Errorf("%w: a generic command has no conversation", ErrNotResumable)
}

func (generic) ParseHook([]byte, bool) (Event, error) {
	return Event{}, fmt.Errorf("%w: a generic command sends no hook events", ErrUnknownEvent)
}

func (generic) Locate(context.Context, Query) (Conversation, error) {
	return Conversation{}, fmt.Errorf("%w: a generic command keeps no conversation", ErrNoConversation)
}

func (generic) Transcript(string, TranscriptOptions) *Transcript { return nil }
