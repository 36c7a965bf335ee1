package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/escape"
	"github.com/sessiond/sessiond/ipc/startflags"
)

// badValue makes the daemon's refusal of a request's values (400) a usage
// error (exit 2), for a command whose request carries nothing but its
// arguments' values.
func badValue(err error) error {
	if errors.Is(err, ipc.ErrBadRequest) {
		return &exitError{exitUsage, err}
	}
	return err
}

func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.out, "%s\n", escape.JSONC1(b))
	return err
}

// passJSON prints a list the daemon sent as printJSON would print it
// decoded (the daemon encodes the same types), without decoding it.
func (a *app) passJSON(data []byte, err error) error {
	if err != nil {
		return err
	}
	if data = bytes.TrimSpace(data); string(data) == "null" {
		data = []byte("[]")
	}
	var b bytes.Buffer
	b.Grow(len(data) * 3 / 2)
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return fmt.Errorf("the daemon's answer is not JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err = a.out.Write(escape.JSONC1(b.Bytes()))
	return err
}

func (a *app) startCmd() *cobra.Command {
	var flags startflags.Flags
	var wait, quiet bool
	var count int
	cmd := &cobra.Command{
		Use:   "start [flags] [DIR...] [-- CMD ARGS...]",
		Short: "Start a session (DIR defaults to .; CMD to the project's sessiond.toml); several DIRs or --count N start a batch",
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs, command, err := dirsAndCommand(cmd, args)
			if err != nil {
				return err
			}
			dirs = flags.TakeWorktreeName(dirs)
			if len(dirs) > 1 && cmd.Flags().Changed("worktree") && !flags.WorktreeNameGiven() {
				return worktreeHint(cmd, &flags, usageErr("--worktree with %d directories", len(dirs)))
			}
			if count < 1 {
				return usageErr("--count %d: want 1 or more", count)
			}
			if len(dirs) > 1 || count > 1 {
				if wait {
					return usageErr("--wait waits for one session: start a batch without it")
				}
				return a.startBatch(cmd.Context(), &flags, dirs, command, count, quiet)
			}
			dir := dirs[0]
			abs, err := absDir(dir)
			if err != nil {
				return err
			}
			req, err := flags.Request(abs, command)
			if remote != nil {
				// This shell's environment is no use on another host: the
				// session there runs with its daemon's (its spec's env and
				// --env still apply).
				req.Environ = nil
			}
			if err != nil {
				return usageErr("%v", err)
			}
			if r := req.Resume; r == "." || r == ".." || strings.HasPrefix(r, "./") || strings.HasPrefix(r, "../") || (strings.ContainsRune(r, '/') && !filepath.IsAbs(r)) {
				if req.Resume, err = absDir(r); err != nil {
					return usageErr("--resume: %v", err)
				}
			}
			ctx := cmd.Context()
			var events *ipc.EventWatcher
			if wait {
				// Subscribe first, so that a quick end is not missed.
				if events, err = a.client.Events(ctx, true); err != nil {
					return err
				}
				defer events.Close()
			}
			data, err := a.client.StartJSON(ctx, req)
			if err != nil {
				return err
			}
			var resp ipc.StartBrief
			if err := json.Unmarshal(data, &resp); err != nil {
				return fmt.Errorf("decode POST /sessions response: %w", err)
			}
			switch {
			case a.json && !wait:
				if err := a.passJSON(data, nil); err != nil {
					return err
				}
			case quiet:
				fmt.Fprintln(a.out, resp.Session.ID)
			default:
				switch {
				case resp.Session.State == ipc.StateQueued:
					fmt.Fprintln(a.out, "⏳ Queued: "+ipc.TerminalLine(queuedWords(resp.Session.Queue))+" (sessionctl queue)")
				case resp.Summary != "":
					fmt.Fprintln(a.out, ipc.TerminalText(resp.Summary))
				default:
					fmt.Fprintln(a.out, "🚀 Starting new session...")
				}
				if w := resp.Session.Worktree; w != nil {
					fmt.Fprintln(a.out, worktreeLine(w))
				}
				fmt.Fprintln(a.out, resp.Session.ID)
			}
			for _, n := range resp.Notices {
				fmt.Fprintln(a.errOut, "sessionctl: warning:", ipc.TerminalLine(n))
			}
			if !wait {
				return nil
			}
			return a.waitEnd(ctx, events, resp.Session.ID)
		},
	}
	flags.Bind(cmd.Flags())
	cmd.Flags().IntVar(&count, "count", 1, "start N sessions of the spec in each DIR (the project needs concurrent = true)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the session ends and exit with its exit code")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the session id")
	return cmd
}

// dirsAndCommand splits `[DIR...] [-- CMD ARGS...]`: DIR defaults to ".",
// the command to none (the project's sessiond.toml says it).
func dirsAndCommand(cmd *cobra.Command, args []string) (dirs, command []string, err error) {
	pos := args
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		pos, command = args[:dash], args[dash:]
		if len(command) == 0 {
			return nil, nil, usageErr("no command after --")
		}
	}
	if len(pos) == 0 {
		pos = []string{"."}
	}
	return pos, command, nil
}

// startBatch starts count sessions in each of dirs in one request, and
// prints each one's id, or why it did not start.
func (a *app) startBatch(ctx context.Context, flags *startflags.Flags, dirs, command []string, count int, quiet bool) error {
	var reqs []ipc.StartRequest
	for _, dir := range dirs {
		abs, err := absDir(dir)
		if err != nil {
			return usageErr("%v (a command goes after --)", err)
		}
		req, err := flags.Request(abs, command)
		if err != nil {
			return usageErr("%v", err)
		}
		if req.Name != "" && (count > 1 || len(dirs) > 1) {
			return usageErr("--name names one session: a batch's sessions are named after their directories")
		}
		for range count {
			r := req
			if len(reqs) > 0 && slices.Equal(r.Environ, reqs[0].Environ) {
				// The environment once, not once per session.
				r.Environ, r.EnvironOfFirst = nil, true
			}
			reqs = append(reqs, r)
		}
	}
	if len(reqs) > ipc.MaxBatch {
		return usageErr("%d sessions in one batch: at most %d", len(reqs), ipc.MaxBatch)
	}
	res, err := a.client.StartBatch(ctx, reqs)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(res)
	}
	failed := 0
	for i, r := range res {
		if r.Error != nil {
			failed++
			fmt.Fprintf(a.errOut, "sessionctl: %s: %s\n", reqs[i].Dir, ipc.TerminalLine(r.Error.Error))
			continue
		}
		if quiet {
			fmt.Fprintln(a.out, r.Session.ID)
		} else {
			fmt.Fprintf(a.out, "%s  %s\n", r.Session.ID, ipc.TerminalLine(r.Session.ProjectDir))
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d sessions did not start", failed, len(res))}
	}
	return nil
}

// waitEnd blocks until the session ends and returns its exit status as
// the command's.
func (a *app) waitEnd(ctx context.Context, events *ipc.EventWatcher, id string) error {
	for {
		ev, err := events.Next()
		if err != nil {
			if ctx.Err() != nil {
				return &exitError{130, errors.New("interrupted; the session goes on")}
			}
			return fmt.Errorf("event stream ended before session %s did: %w", id, err)
		}
		// Its end may be among the events a missed stands for: the
		// record says.
		missed := ev.Type == ipc.EventMissed
		if !missed && (ev.SessionID != id || (ev.Type != ipc.EventEnded && ev.Type != ipc.EventFailed)) {
			continue
		}
		rec, err := a.client.Session(ctx, id)
		if err != nil {
			return err
		}
		if missed && ipc.Live(rec.State) {
			continue
		}
		if a.json {
			_ = a.printJSON(rec)
		}
		return &exitError{ipc.ExitStatus(rec), fmt.Errorf("session %s ended: %s", id, rec.EndReason)}
	}
}

func clipText(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// shortDuration is ipc.ShortDuration: 45s, 12m05s, 3h04m, 2d5h.
func shortDuration(d time.Duration) string { return ipc.ShortDuration(d) }

func (a *app) stopCmd() *cobra.Command {
	var grace string
	var all bool
	cmd := &cobra.Command{
		Use:   "stop [--grace D] [--all] [ID|DIR...]",
		Short: "Stop sessions: stop signal, grace, SIGKILL; returns once each handoff is written",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if all && len(args) > 0 {
				return usageErr("give session ids or directories, or --all, not both")
			}
			if !all && len(args) == 0 {
				args = []string{"."} // the project here
			}
			if grace != "" {
				if g, err := config.ParseDuration(grace); err != nil || g.Duration < 0 {
					return usageErr("--grace %q: want a duration such as 10s or 0s", grace)
				}
			}
			ids := args
			if !all {
				for i, arg := range args {
					id, err := a.resolve(ctx, arg)
					if err != nil {
						return err
					}
					ids[i] = id
				}
			}
			return a.stopAll(ctx, ipc.StopBatchRequest{IDs: ids, All: all, Grace: grace})
		},
	}
	cmd.Flags().StringVar(&grace, "grace", "", "time between the stop signal and SIGKILL (default the session's stop_grace)")
	cmd.Flags().BoolVar(&all, "all", false, "stop every live session")
	return cmd
}

// stopAll stops sessions in one request, which stops them all at once, and
// reports each end.
func (a *app) stopAll(ctx context.Context, req ipc.StopBatchRequest) error {
	tctx, stopped := context.WithCancel(ctx)
	told := make(chan struct{})
	tell := time.AfterFunc(stopPatience, func() { defer close(told); a.tellWaiting(tctx, req) })
	if !a.json {
		req.View = ipc.StopViewBrief
	}
	results, err := a.client.StopBatch(ctx, req)
	stopped()
	if !tell.Stop() {
		<-told
	}
	if err != nil {
		return err
	}
	var errs []error
	recs := []*ipc.Session{}
	out := bufio.NewWriter(a.out)
	for _, r := range results {
		if r.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", r.ID, r.Error.Error))
			continue
		}
		if a.json {
			recs = append(recs, r.Session)
			continue
		}
		b := r.Brief
		if b == nil && r.Session != nil {
			b = ipc.BriefOf(r.Session) // a daemon that knows no brief view
		}
		if b == nil {
			continue
		}
		fmt.Fprintf(out, "%s %s: %s\n", b.ID, b.State, ipc.TerminalLine(describe(b)))
		if b.HandoffPath != "" {
			fmt.Fprintf(out, "  handoff: %s\n", b.HandoffPath)
		}
		if line := containedLine(b); line != "" {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if a.json {
		_ = a.printJSON(recs)
	}
	return errors.Join(errs...)
}

// stopPatience is how long a stop goes on before sessionctl says what it
// waits for.
const stopPatience = 2 * time.Second

// maxWaitingLines bounds the sessions a waiting stop names.
const maxWaitingLines = 5

// tellWaiting says, on stderr, which of the sessions being stopped have
// not exited yet, the signal they were sent and when SIGKILL comes; it
// says nothing once the stop has returned (ctx done).
func (a *app) tellWaiting(ctx context.Context, req ipc.StopBatchRequest) {
	recs, err := a.client.Sessions(ctx, ipc.ListOptions{})
	if err != nil {
		return
	}
	want := map[string]bool{}
	for _, id := range req.IDs {
		want[id] = true
	}
	var lines []string
	more := 0
	for _, r := range recs {
		if r.State != ipc.StateStopping || r.Stop == nil || !req.All && !want[r.ID] {
			continue
		}
		if len(lines) == maxWaitingLines {
			more++
			continue
		}
		sig := "the stop signal"
		if full, err := a.client.Session(ctx, r.ID); err == nil && full.Spec != nil && full.Spec.StopSignal.Name != "" {
			sig = full.Spec.StopSignal.Name
		}
		kill := r.Stop.At.Add(time.Duration(r.Stop.GraceMS) * time.Millisecond)
		switch {
		case r.EndedAt != nil:
			// The command is gone and its end recorded: what is left is
			// the end's files (a full disk holds them; the daemon's
			// warning says so).
			lines = append(lines, fmt.Sprintf("sessionctl: waiting for %s (%s): its command has ended; its end is not on disk yet",
				r.ID, ipc.TerminalLine(r.Name)))
			continue
		case !time.Now().Before(kill):
			lines = append(lines, fmt.Sprintf("sessionctl: waiting for %s (%s): its stop grace ran out %s ago; its end is being written",
				r.ID, ipc.TerminalLine(r.Name), roundSeconds(time.Since(kill))))
			continue
		}
		lines = append(lines, fmt.Sprintf("sessionctl: waiting for %s (%s) to exit: %s sent %s ago; SIGKILL in %s (stop_grace; --grace 0s to kill now)",
			r.ID, ipc.TerminalLine(r.Name), sig, roundSeconds(time.Since(r.Stop.At)), roundSeconds(time.Until(kill))))
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("sessionctl: and %d more", more))
	}
	if ctx.Err() != nil {
		return
	}
	for _, l := range lines {
		fmt.Fprintln(a.errOut, l)
	}
}

// roundSeconds writes d in whole seconds, never below zero.
func roundSeconds(d time.Duration) time.Duration {
	return max(d, 0).Round(time.Second)
}

func describe(r *ipc.StopBrief) string {
	reason := ipc.EndLabel(r.EndReason)
	switch {
	case r.Error != "":
		return r.Error
	case r.Signal != "":
		return fmt.Sprintf("%s (%s)", reason, r.Signal)
	case r.ExitCode != nil:
		return fmt.Sprintf("%s (exit %d)", reason, *r.ExitCode)
	case r.EndReason == ipc.EndCrashed:
		return reason + " (exit status unknown)"
	}
	return reason
}

func (a *app) killCmd() *cobra.Command {
	var sig string
	cmd := &cobra.Command{
		Use:   "kill [-s SIG] ID|DIR",
		Short: "Send a signal to the session's process group",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := config.ParseSignal(sig); err != nil {
				return usageErr("%v", err)
			}
			id, err := a.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.client.Signal(cmd.Context(), id, sig)
		},
	}
	cmd.Flags().StringVarP(&sig, "signal", "s", "SIGTERM", "signal name or number")
	return cmd
}

func (a *app) logsCmd() *cobra.Command {
	var follow, raw bool
	var tail int
	var times logTimeFlags
	cmd := &cobra.Command{
		Use:   "logs [-f] [-n N] [-t] [--since T] [--until T] [--raw] [ID|DIR]",
		Short: "Print the session's combined stdout and stderr",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 {
				return usageErr("-n: want a non-negative number of lines")
			}
			opt := ipc.LogOptions{Tail: tail, Follow: follow, Raw: raw}
			if err := times.apply(&opt, time.Now()); err != nil {
				return err
			}
			id, err := a.resolve(cmd.Context(), argOrHere(args))
			if err != nil {
				return err
			}
			rc, err := a.client.Logs(cmd.Context(), id, opt)
			if err != nil {
				return err
			}
			defer rc.Close()
			a.noteStamps(id, opt, rc.Stamps)
			out := a.out
			if !raw {
				// What is left of a user's control characters is shown,
				// not obeyed.
				ew := escape.NewWriter(a.out)
				defer func() { _ = ew.Flush() }()
				out = ew
			}
			_, err = io.Copy(out, rc)
			if cmd.Context().Err() != nil {
				return nil
			}
			if follow && (err == nil || errors.Is(err, io.ErrUnexpectedEOF)) {
				return a.followEnded(cmd.Context(), id, opt, err)
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing output as it comes, until the session ends")
	cmd.Flags().IntVarP(&tail, "lines", "n", 0, "print only the last N lines")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the log's raw bytes, control sequences and all (colours, cursor movement, titles); by default they are stripped, and any other control character but tab and newline is dropped")
	times.register(cmd)
	return cmd
}

// followEnded is what logs -f says once its stream has ended (err nil, or
// cut before its end): nothing when the session ended or --until passed;
// else the stream ended for another reason (the daemon stopped or
// restarted, the connection was lost) while the session may still run,
// which a script that waits on logs -f must not take for the session's
// end.
func (a *app) followEnded(ctx context.Context, id string, opt ipc.LogOptions, err error) error {
	var cut *ipc.CutError
	if errors.As(err, &cut) {
		return err
	}
	if err == nil {
		if !opt.Until.IsZero() && !time.Now().Before(opt.Until) {
			return nil
		}
		st, serr := a.client.SessionTimes(ctx, id)
		if serr == nil && !ipc.Live(st.State) {
			return nil
		}
	}
	return fmt.Errorf("the log stream of %s ended before the session did: sessiond stopped or restarted, or the connection was lost (sessionctl logs -f %s follows it again)", id, id)
}

func (a *app) inspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect ID|DIR",
		Short: "Print the full session record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.passJSON(a.client.SessionJSON(cmd.Context(), id))
		},
	}
}

func (a *app) eventsCmd() *cobra.Command {
	var follow, allContexts bool
	cmd := &cobra.Command{
		Use:   "events [-f] [--all-contexts | --context a,b]",
		Short: "Print recent events (started, warned, checkpoint, activity, stopping, ended, ...); -f follows new ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if allContexts || strings.Contains(a.context, ",") {
				return a.eventsHosts(cmd.Context(), follow, allContexts)
			}
			w, err := a.client.Events(cmd.Context(), follow)
			if err != nil {
				return err
			}
			defer w.Close()
			for {
				ev, err := w.Next()
				if err != nil {
					if follow && cmd.Context().Err() == nil {
						// Not the user's interrupt: sessiond shut down, or
						// the connection was lost.
						return fmt.Errorf("the event stream ended: sessiond shut down or the connection was lost")
					}
					return nil
				}
				if a.json {
					b, _ := json.Marshal(ev)
					b = escape.JSONC1(b)
					fmt.Fprintf(a.out, "%s\n", b)
					continue
				}
				fmt.Fprintf(a.out, "%s  %-10s %s  %s\n", ev.Time.Local().Format("15:04:05.000"), ev.Type, ev.SessionID, ipc.TerminalLine(ev.Message))
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print new events as they happen, until interrupted")
	cmd.Flags().BoolVar(&allContexts, "all-contexts", false, "every context's events together, each line with its host (--context a,b: those)")
	return cmd
}

func (a *app) extendCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "extend ID|DIR DURATION",
		Short: "Move the session's deadline (and warning) later",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := config.ParseDuration(args[1])
			if err != nil || d.Duration <= 0 {
				return usageErr("DURATION %q: want a positive duration such as 30m or 1h", args[1])
			}
			id, err := a.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rec, err := a.client.Extend(cmd.Context(), id, args[1])
			if err != nil {
				return badValue(err)
			}
			if a.json {
				return a.printJSON(rec)
			}
			fmt.Fprintf(a.out, "%s: deadline %s (in %s), warning at %s\n", rec.ID, rec.Deadline.Local().Format(time.RFC3339),
				shortDuration(time.Until(rec.Deadline)), rec.WarnAt.Local().Format(time.RFC3339))
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		// A negative DURATION reads as flags: -5m is "-5" and "-m".
		if m := negativeArg().FindStringSubmatch(err.Error()); m != nil {
			return usageErr("DURATION %q: a deadline only moves later; want a positive duration such as 30m or 1h (to end sooner: sessionctl stop)", m[1])
		}
		return &exitError{exitUsage, err}
	})
	return cmd
}

// negativeArg finds, in pflag's error, an argument that is a negative
// number.
var negativeArg = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`unknown shorthand flag: '[0-9]' in (-[0-9][^ ]*)`)
})

// remaining is what sessionctl remaining prints with --json.
type remaining struct {
	SessionID string    `json:"session_id"`
	Deadline  time.Time `json:"deadline"`
	WarnAt    time.Time `json:"warn_at"`
	Seconds   int64     `json:"seconds_left"`
	Left      string    `json:"left"`
	Warned    bool      `json:"warned"`
	State     string    `json:"state"`
}

func (a *app) remainingCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remaining [ID|DIR]",
		Short: "How long the session has left and whether it was warned (from inside a session, no argument)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var id string
			var err error
			if len(args) == 1 {
				id, err = a.resolve(cmd.Context(), args[0])
			} else {
				id, err = sessionFromEnv()
			}
			if err != nil {
				return err
			}
			rec, err := a.client.SessionTimes(cmd.Context(), id)
			if err != nil {
				return err
			}
			if !ipc.Live(rec.State) {
				// An ended session has no time left to tell: say how it
				// ended, and fail, so that a script does not read 0s as "go on".
				if a.json {
					_ = a.printJSON(remaining{SessionID: rec.ID, Deadline: rec.Deadline, WarnAt: rec.WarnAt, State: rec.State})
				}
				when := ""
				if rec.EndedAt != nil {
					when = " at " + rec.EndedAt.Local().Format(time.RFC3339)
				}
				how := rec.State
				if rec.EndReason != "" {
					how = rec.EndReason
				}
				switch {
				case rec.ExitCode != nil:
					how += fmt.Sprintf(", exit %d", *rec.ExitCode)
				case rec.Signal != "":
					how += ", " + rec.Signal
				}
				return &exitError{exitFailed, fmt.Errorf("session %s has ended (%s)%s: no time left", rec.ID, ipc.TerminalLine(how), when)}
			}
			left := time.Until(rec.Deadline).Round(time.Second)
			if left < 0 {
				left = 0
			}
			r := remaining{SessionID: rec.ID, Deadline: rec.Deadline, WarnAt: rec.WarnAt, Seconds: int64(left / time.Second),
				Left: left.String(), Warned: rec.State == ipc.StateWarned, State: rec.State}
			if a.json {
				return a.printJSON(r)
			}
			warned := "not warned yet"
			if r.Warned {
				warned = "WARNED: wrap up now"
			}
			fmt.Fprintf(a.out, "%s left (deadline %s); %s\n", r.Left, rec.Deadline.Local().Format(time.RFC3339), warned)
			return nil
		},
	}
}

// containedLine says what the end of a contained session found in its
// cgroup, when it found something: "contained: 2 processes the command
// left were killed with its cgroup; nothing escaped".
func containedLine(b *ipc.StopBrief) string {
	if b.Killed == 0 {
		return ""
	}
	what := "1 process the command left was"
	if b.Killed > 1 {
		what = fmt.Sprintf("%d processes the command left were", b.Killed)
	}
	line := "contained: " + what + " killed with its cgroup"
	if b.Empty {
		line += "; nothing escaped"
	}
	return line
}
