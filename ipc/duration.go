package ipc

import (
	"strconv"
	"time"
)

// ShortDuration writes a duration as the listings show it (sessionctl ps,
// the dashboard): 45s, 12m05s, 3h04m, 2d5h; below zero is 0s.
func ShortDuration(d time.Duration) string {
	// Without fmt: a listing shows two a row.
	return string(AppendShortDuration(make([]byte, 0, 8), d))
}

// AppendShortDuration appends d as ShortDuration writes it.
func AppendShortDuration(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		b = append(strconv.AppendInt(b, int64(d.Seconds()), 10), 's')
	case d < time.Hour:
		b = append(strconv.AppendInt(b, int64(d.Minutes()), 10), 'm')
		b = append(pad2(b, int64(d.Seconds())%60), 's')
	case d < 48*time.Hour:
		b = append(strconv.AppendInt(b, int64(d.Hours()), 10), 'h')
		b = append(pad2(b, int64(d.Minutes())%60), 'm')
	default:
		b = append(strconv.AppendInt(b, int64(d.Hours())/24, 10), 'd')
		b = append(strconv.AppendInt(b, int64(d.Hours())%24, 10), 'h')
	}
	return b
}

// pad2 appends n (0-99) in two digits.
func pad2(b []byte, n int64) []byte {
	if n < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, n, 10)
}
