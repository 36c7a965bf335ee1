package ui

import (
	"context"
	"errors"
	"fmt"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"golang.org/x/term"
)

// Run shows the dashboard on the terminal until the user quits (q,
// ctrl-c) or ctx ends, and leaves the terminal as it found it.
func Run(ctx context.Context, opt Options) error {
	if opt.Client == nil {
		return errors.New("ui: no daemon client")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(opt)
	m.conn = &conn{ctx: ctx, client: opt.Client}
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opt.NoColor {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	// The dashboard names the window; the title it had comes back after
	// (xterm's title stack, which tmux, VTE and iTerm2 keep too).
	if term.IsTerminal(int(os.Stdout.Fd())) {
		_, _ = os.Stdout.WriteString("\x1b[22;0t")
		defer func() { _, _ = os.Stdout.WriteString("\x1b[23;0t") }()
	}
	_, err := tea.NewProgram(m, opts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		// A signal ended the dashboard; the terminal was restored.
		return nil
	}
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}
