package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/attach"
)

// reattachFor bounds how long attach tries to reach the daemon again after
// its connection broke (a daemon restart), before it gives up.
const reattachFor = 20 * time.Second

func (a *app) attachCmd() *cobra.Command {
	var readOnly bool
	var key string
	cmd := &cobra.Command{
		Use:   "attach [--read-only] [--detach-key K] ID|DIR",
		Short: "Attach to a terminal session: its screen in your terminal, your keys to it (detach with ctrl-])",
		Long: `attach joins your terminal to the session's: you see its screen and type into it,
and the window size follows yours. The detach key (ctrl-] unless the spec's
detach_key or --detach-key says otherwise) leaves it running. One viewer types
at a time; others attach with --read-only. If the daemon restarts meanwhile,
attach reconnects.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, err := a.resolve(ctx, args[0])
			if err != nil {
				return err
			}
			rec, err := a.client.Session(ctx, id)
			if err != nil {
				return err
			}
			if err := attachable(rec); err != nil {
				return err
			}
			detach := byte(0)
			switch {
			case key != "":
				if detach, err = attach.ParseDetachKey(key); err != nil {
					return usageErr("--detach-key: %v", err)
				}
			case rec.Spec != nil:
				detach = rec.Spec.DetachKeyByte()
			default:
				detach, _ = config.ParseDetachKey("")
			}
			return a.attach(ctx, rec.ID, readOnly, detach)
		},
	}
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "watch without typing (another viewer may be the writer)")
	cmd.Flags().StringVar(&key, "detach-key", "", `key that detaches, as ctrl-X or ^X (default the spec's detach_key, "ctrl-]")`)
	return cmd
}

// attachable says why a session cannot be attached to, in words a user
// can act on.
func attachable(rec *ipc.Session) error {
	if !rec.TTY && (rec.Spec == nil || !rec.Spec.OnTerminal()) {
		return &exitError{exitFailed, fmt.Errorf("session %s has no terminal (it was started without --tty); follow its output with: sessionctl logs -f %s", rec.ID, rec.ID)}
	}
	if !ipc.Live(rec.State) {
		return &exitError{exitFailed, fmt.Errorf("session %s has ended (%s); its last screen: sessionctl screen %s", rec.ID, endSummary(rec), rec.ID)}
	}
	return nil
}

// attach runs the attach loop, and attaches again when the daemon's end of
// the stream broke while the session runs on (the daemon restarted).
func (a *app) attach(ctx context.Context, id string, readOnly bool, key byte) error {
	mode := ""
	if readOnly {
		mode = " read-only"
	}
	var reattachBy time.Time // while reattaching: until when
	for {
		conn, st, err := a.client.Attach(ctx, id, ipc.AttachOptions{ReadOnly: readOnly})
		if err != nil {
			var ae *ipc.Error
			if errors.As(err, &ae) && strings.Contains(ae.Message, "writer") && !readOnly {
				return &exitError{exitFailed, fmt.Errorf("%s (sessionctl attach --read-only %s watches without typing)", ae.Message, id)}
			}
			if !reattachBy.IsZero() && !errors.As(err, &ae) && time.Now().Before(reattachBy) {
				// The daemon is still coming back.
				if err := a.waitReattach(ctx, id, reattachBy); err != nil {
					return err
				}
				continue
			}
			return err
		}
		reattachBy = time.Time{}
		fmt.Fprintf(a.errOut, "[attached%s to %s, %s; detach with %s]\r\n", mode, id, st.Size, attach.KeyName(key))
		res, err := attach.Run(ctx, conn, attach.Options{DetachKey: key, ReadOnly: readOnly})
		if err != nil {
			return err
		}
		switch res.Reason {
		case attach.Detached:
			fmt.Fprintf(a.errOut, "\n[detached from %s; it goes on]\n", id)
			return nil
		case attach.Ended:
			fmt.Fprintf(a.errOut, "\n[the command of %s ended: %s]\n", id, res.Exit)
			return nil
		}
		if ctx.Err() != nil {
			fmt.Fprintf(a.errOut, "[attach to %s interrupted; it goes on]\n", id)
			return nil
		}
		fmt.Fprintf(a.errOut, "[connection to %s lost (%v); reattaching...]\r\n", id, res.Err)
		reattachBy = time.Now().Add(reattachFor)
		if err := a.waitReattach(ctx, id, reattachBy); err != nil {
			return err
		}
	}
}

// waitReattach waits until the session can be attached to again, or says
// why it cannot. Until deadline, any failure to reach the daemon (gone,
// or still starting: a connection reset, a stale socket) is waited out.
func (a *app) waitReattach(ctx context.Context, id string, deadline time.Time) error {
	for {
		rec, err := a.client.Session(ctx, id)
		if err == nil {
			if aerr := attachable(rec); aerr != nil {
				return aerr
			}
			return nil
		}
		var ae *ipc.Error
		if errors.As(err, &ae) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return &exitError{exitFailed, errors.New("interrupted while reattaching; the session goes on")}
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (a *app) screenCmd() *cobra.Command {
	var scrollback int
	cmd := &cobra.Command{
		Use:   "screen [--scrollback N] ID|DIR",
		Short: "Print what a terminal session shows now, as text (--json adds the cursor and size)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if scrollback < 0 {
				return usageErr("--scrollback: want a non-negative number of lines")
			}
			ctx := cmd.Context()
			id, err := a.resolve(ctx, args[0])
			if err != nil {
				return err
			}
			scr, err := a.client.Screen(ctx, id, scrollback)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(scr)
			}
			var b strings.Builder
			for _, l := range scr.Scrollback {
				b.WriteString(l)
				b.WriteByte('\n')
			}
			b.WriteString(scr.Text())
			_, err = io.WriteString(a.out, ipc.TerminalText(b.String()))
			return err
		},
	}
	cmd.Flags().IntVar(&scrollback, "scrollback", 0, "also print this many lines of scrollback above the screen")
	return cmd
}

func (a *app) sendCmd() *cobra.Command {
	var enter bool
	cmd := &cobra.Command{
		Use:   "send [--enter] ID|DIR TEXT",
		Short: "Type TEXT into a terminal session (--enter presses Enter after it)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if args[1] == "" && !enter {
				return usageErr("nothing to send: TEXT is empty and --enter is not given")
			}
			if !utf8.ValidString(args[1]) {
				// The API carries text: a byte that is no character
				// would reach the terminal as U+FFFD.
				return usageErr("TEXT is not valid UTF-8: only text can be sent (attach to type other bytes)")
			}
			id, err := a.resolve(ctx, args[0])
			if err != nil {
				return err
			}
			return a.client.Send(ctx, id, ipc.SendRequest{Text: args[1], Enter: enter})
		},
	}
	cmd.Flags().BoolVar(&enter, "enter", false, "press Enter after the text")
	return cmd
}

// endSummary says how a session ended: "complete, exit code 0".
func endSummary(rec *ipc.Session) string {
	switch {
	case rec.EndReason == "":
		return rec.State
	case rec.Signal != "":
		return rec.EndReason + ", " + rec.Signal
	case rec.ExitCode != nil:
		return fmt.Sprintf("%s, exit code %d", rec.EndReason, *rec.ExitCode)
	}
	return rec.EndReason
}
