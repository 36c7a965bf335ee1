package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

// logTimeFlags are the logs command's flags about time: --timestamps,
// --since and --until.
type logTimeFlags struct {
	timestamps   bool
	since, until string
}

func (f *logTimeFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.timestamps, "timestamps", "t", false, "prefix each line with the time it was written (RFC 3339, UTC)")
	cmd.Flags().StringVar(&f.since, "since", "", "only lines written since a time: a duration before now (10m, 2h) or an RFC 3339 time")
	cmd.Flags().StringVar(&f.until, "until", "", "only lines written until a time: a duration before now (10m, 2h) or an RFC 3339 time")
}

// apply checks the flags and sets them on opt; a bad value is a usage
// error, found before any request.
func (f *logTimeFlags) apply(opt *ipc.LogOptions, now time.Time) error {
	opt.Timestamps = f.timestamps
	for _, p := range []struct {
		flag, value string
		to          *time.Time
	}{{"--since", f.since, &opt.Since}, {"--until", f.until, &opt.Until}} {
		if p.value == "" {
			continue
		}
		t, err := ipc.ParseLogTime(p.value, now)
		if err != nil {
			return usageErr("%s: %v", p.flag, err)
		}
		*p.to = t
	}
	if !opt.Since.IsZero() && !opt.Until.IsZero() && opt.Until.Before(opt.Since) {
		return usageErr("--until %s is before --since %s: nothing could match", f.until, f.since)
	}
	return nil
}

// noteStamps says on stderr when some lines asked for by time have none.
func (a *app) noteStamps(id string, opt ipc.LogOptions, coverage string) {
	ranged := !opt.Since.IsZero() || !opt.Until.IsZero()
	switch coverage {
	case ipc.LogStampsNone:
		fmt.Fprintf(a.errOut, "sessionctl: the log of session %s has no timestamps (it was written before sessiond kept them); its lines are printed without\n", id)
	case ipc.LogStampsPartial:
		if ranged {
			fmt.Fprintf(a.errOut, "sessionctl: the first lines of session %s's log have no timestamps (written before sessiond kept them) and are left out\n", id)
		} else {
			fmt.Fprintf(a.errOut, "sessionctl: the first lines of session %s's log have no timestamps (written before sessiond kept them)\n", id)
		}
	}
}
