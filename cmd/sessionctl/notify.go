package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

func (a *app) notifyCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Notification rules: list them, or send a test through them",
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "also the rules of this project (default: the current directory, when it has a sessiond.toml)")
	project := func() (string, error) {
		if dir != "" {
			return absDir(dir)
		}
		if _, err := os.Stat(config.ProjectFile); err == nil {
			return absDir(".")
		}
		return "", nil
	}
	test := &cobra.Command{
		Use:   "test [RULE]",
		Short: "Send a sample event through a notification rule (every rule without RULE)",
		Long: "Send the sample event (event \"test\": a session that ended with an error) through the rule named\n" +
			"RULE, or numbered RULE in `sessionctl notify rules`, or through every rule, at once: past the rule's\n" +
			"events, filters and queue. Prints what happened to each: delivered, or the sink's error. Exits 1\n" +
			"when one failed. The rules are the daemon's, the project's (--dir), and the spec's on_warning.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := project()
			if err != nil {
				return err
			}
			req := ipc.NotifyTestRequest{Dir: d}
			if len(args) == 1 {
				req.Rule = args[0]
			}
			resp, err := a.client.NotifyTest(cmd.Context(), req)
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range resp.Results {
				if !r.Delivered {
					failed++
				}
			}
			if a.json {
				if err := a.printJSON(resp); err != nil {
					return err
				}
			} else {
				for _, r := range resp.Results {
					fmt.Fprintf(a.out, "%d %s (%s, %s): ", r.Number, r.Label, r.Origin, sinkText(r.Rule))
					if r.Delivered {
						fmt.Fprintf(a.out, "delivered in %dms\n", r.TookMS)
					} else {
						fmt.Fprintf(a.out, "failed after %dms: %s\n", r.TookMS, ipc.TerminalLine(r.Error))
					}
				}
			}
			if failed > 0 {
				return &exitError{exitFailed, fmt.Errorf("%d of %s failed", failed, plural(len(resp.Results), "notification"))}
			}
			return nil
		},
	}
	rules := &cobra.Command{
		Use:     "rules",
		Aliases: []string{"ls"},
		Short:   "List the notification rules and what the notifier did since the daemon started",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := project()
			if err != nil {
				return err
			}
			st, err := a.client.NotifyStatus(cmd.Context(), d)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(st)
			}
			if len(st.Rules) == 0 {
				where := "the daemon config"
				if st.ProjectDir != "" {
					where += " or " + filepath.Join(st.ProjectDir, config.ProjectFile)
				}
				fmt.Fprintf(a.out, "no notification rules in %s\n", where)
			} else {
				tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "#\tORIGIN\tNAME\tON\tSINK")
				for _, r := range st.Rules {
					name := r.Rule.Name
					if name == "" {
						name = "-"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Number, r.Origin, name, strings.Join(r.Rule.On, ","), sinkText(r.Rule))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			s := st.Stats
			fmt.Fprintf(a.out, "\nsince the daemon started: %d events, %d notifications queued, %d sent, %d failed, %d dropped, %d held back by min_interval, %d repeats left out; %d pending\n",
				s.Published, s.Queued, s.Sent, s.Failed, s.Dropped, s.Suppressed, s.Duplicates, s.Pending)
			return nil
		},
	}
	cmd.AddCommand(test, rules)
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr("unknown notify command %q: test or rules", args[0])
		}
		return usageErr("notify: give a command: test [RULE] or rules")
	}
	return cmd
}

// sinkText says where a rule sends to: its command, its webhook's host, or
// the desktop.
func sinkText(r config.NotifyRule) string {
	switch r.Sink() {
	case config.SinkCommand:
		return "command " + strings.Join(r.Command, " ")
	case config.SinkWebhook:
		t := r.Template
		if t == "" {
			t = config.TemplateJSON
		}
		return "webhook " + r.Webhook + " (" + t + ")"
	case config.SinkDesktop:
		return "desktop"
	}
	return "no sink"
}
