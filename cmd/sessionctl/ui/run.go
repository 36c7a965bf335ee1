package ui

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
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
