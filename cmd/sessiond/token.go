package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/tokens"
)

// newTokenCmd is `sessiond token create|ls|revoke`: the web listener's
// tokens, in the daemon's state dir.
func newTokenCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Tokens of the web listener ([web] listen): create, ls, revoke",
		Long: `Tokens for the web listener ([web] listen in the daemon's config): each acts as
its user, with exactly the rights that user has on the socket, bounded by its
scope: read (what GET answers; attach read-only) or control (everything the
user may do). A token is shown once, at its creation; the daemon keeps only
its hash, in the state dir's tokens.json (0600).`,
	}
	cmd.PersistentFlags().StringVar(&f.config, "config", "", "daemon config file")
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", "", "state directory of the daemon")
	store := func() (*tokens.Store, error) {
		cfg, err := loadConfig(f)
		if err != nil {
			return nil, err
		}
		return tokens.Open(cfg.StateDir), nil
	}
	var userName, scope, expires, name string
	create := &cobra.Command{
		Use:   "create --user NAME --scope read|control [--expires 30d] [--name LABEL]",
		Short: "Make a token; it is printed once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			me, err := user.Current()
			if err != nil {
				return err
			}
			if userName == "" {
				userName = me.Username
			}
			if os.Geteuid() != 0 && userName != me.Username {
				return &exitError{1, fmt.Errorf("a token for %s: only root makes tokens for other users (a daemon of your own serves you alone)", userName)}
			}
			var ttl time.Duration
			if expires != "" {
				d, err := parseDays(expires)
				if err != nil {
					return &exitError{2, err}
				}
				ttl = d
			}
			s, err := store()
			if err != nil {
				return err
			}
			tok, t, err := s.Create(name, userName, scope, ttl, time.Now())
			if err != nil {
				return &exitError{1, err}
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			exp := "never expires"
			if !t.Expires.IsZero() {
				exp = "expires " + t.Expires.Local().Format(time.RFC3339)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "sessiond: token %s for %s, scope %s, %s: shown once, keep it (send it as Authorization: Bearer TOKEN)\n", t.ID, t.User, t.Scope, exp)
			return nil
		},
	}
	create.Flags().StringVar(&userName, "user", "", "the user the token acts as (default you)")
	create.Flags().StringVar(&scope, "scope", tokens.ScopeRead, "read or control")
	create.Flags().StringVar(&expires, "expires", "", "lifetime: 30d, 12h (default never)")
	create.Flags().StringVar(&name, "name", "", "a label (the phone it is for)")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			list, err := s.List()
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no tokens")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tUSER\tSCOPE\tCREATED\tEXPIRES")
			for _, t := range list {
				exp := "never"
				if !t.Expires.IsZero() {
					exp = t.Expires.Local().Format(time.DateTime)
					if time.Now().After(t.Expires) {
						exp += " (expired)"
					}
				}
				n := t.Name
				if n == "" {
					n = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, n, t.User, t.Scope, t.Created.Local().Format(time.DateTime), exp)
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID|user:NAME...",
		Short: "Revoke tokens (at once: the daemon rereads them within a second)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := store()
			if err != nil {
				return err
			}
			var errs []error
			for _, id := range args {
				n, err := s.Revoke(id)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%d)\n", id, n)
			}
			if len(errs) > 0 {
				return &exitError{1, errors.Join(errs...)}
			}
			return nil
		},
	}
	cmd.AddCommand(create, ls, revoke)
	return cmd
}

// parseDays reads a duration that may be in days ("30d") or as Go writes
// one ("12h").
func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err != nil || days <= 0 || days > 3650 {
			return 0, fmt.Errorf("--expires %q: want a number of days (30d) or a duration (12h)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := config.ParseDuration(s)
	if err != nil || d.Duration <= 0 {
		return 0, fmt.Errorf("--expires %q: want a number of days (30d) or a duration (12h)", s)
	}
	return d.Duration, nil
}
