package state

import "time"

// Size caps of the files the daemon reads. Each is far above what sessiond
// writes or a person keeps in such a file, and low enough that a hostile or
// runaway file costs the daemon a bounded amount of memory; a larger file is
// an error naming the cap (and a state file is moved aside, see ReadJSON).
const (
	// MaxStateSize caps session_state.json: Bound keeps what sessiond
	// writes under 300 KiB even with every field at its limit.
	MaxStateSize = 1 << 20
	// MaxHandoffSize caps handoff.json: the writer trims file lists and the
	// log tail until a handoff fits (see SaveHandoff).
	MaxHandoffSize = 8 << 20
	// MaxFeatureListSize caps the project's feature list.
	MaxFeatureListSize = 8 << 20
	// MaxConfigSize caps a project's sessiond.toml.
	MaxConfigSize = 1 << 20
	// MaxExcludeSize caps the .git/info/exclude sessiond adds its line to.
	MaxExcludeSize = 1 << 20
	// MaxProgressSize caps the progress log, which is read whole to append
	// an entry (about 1 KiB per session: some 16,000 sessions).
	MaxProgressSize = 16 << 20
	// MaxSmallFileSize caps session.lock, warning.json, a .git file and a
	// commondir file, which hold a few hundred bytes.
	MaxSmallFileSize = 64 << 10
	// MaxRecordSize caps what ReadJSON reads (the daemon's session records).
	MaxRecordSize = 8 << 20
)

// StaleTempAge is how old the temporary file of an atomic write must be
// before RemoveStaleTemps removes it. A write holds its temporary file for
// milliseconds (one write and one fsync of a small file); minutes leave a
// concurrent writer on a slow disk alone.
const StaleTempAge = 5 * time.Minute
