package ipc

import "github.com/sessiond/sessiond/config"

// LimitsOver is base with the request's limits over it, checked; a
// malformed one is a *config.FieldError naming its key.
func (r StartRequest) LimitsOver(base config.Limits) (config.Limits, error) {
	l := base
	for _, m := range []struct {
		key, v string
		dst    *config.Size
	}{{"memory_max", r.MemoryMax, &l.MemoryMax}, {"memory_high", r.MemoryHigh, &l.MemoryHigh}} {
		if m.v == "" {
			continue
		}
		z, err := config.ParseSize(m.v)
		if err != nil {
			return l, &config.FieldError{Key: m.key, Msg: err.Error()}
		}
		*m.dst = z
	}
	if r.PidsMax != 0 {
		l.PidsMax = r.PidsMax
	}
	if r.CPUWeight != 0 {
		l.CPUWeight = r.CPUWeight
	}
	if r.CPUMax != "" {
		l.CPUMax = r.CPUMax
	}
	if r.Limits != "" {
		l.Mode = r.Limits
	}
	return l, l.Validate()
}
