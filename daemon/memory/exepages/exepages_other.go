//go:build !linux

package exepages

// Drop does nothing where the mappings cannot be listed.
func Drop() (int64, error) { return 0, nil }
