package configfile

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// CronParser parses checkpoint schedules: standard five-field cron, an
// optional leading seconds field, and descriptors such as "@every 5m".
var CronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a checkpoint schedule. The cron parser can panic on
// odd input, so a panic is turned into an error.
func ParseSchedule(spec string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule %q: %v", spec, r)
		}
	}()
	sched, err = CronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w (use cron syntax such as \"*/5 * * * *\" or \"@every 5m\")", spec, err)
	}
	// The parser takes any interval, and one under a second (zero and
	// negative ones included) as every second.
	if every, ok := strings.CutPrefix(spec, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(every)); err == nil && d < time.Second {
			return nil, fmt.Errorf("invalid schedule %q: the interval must be 1s or more (such as \"@every 5m\"); \"\" turns checkpoints off", spec)
		}
	}
	return sched, nil
}

// checkSchedule validates a checkpoint schedule; "" (off) is valid.
func checkSchedule(spec string) error {
	if spec == "" {
		return nil
	}
	_, err := ParseSchedule(spec)
	return err
}
