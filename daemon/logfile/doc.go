// Package logfile keeps a session's output log under its size cap while
// the child writes to it, and reads the log back as one stream.
//
// # Who writes, who rotates
//
// The child writes its stdout and stderr straight into
// sessions/<id>/output.log through a descriptor of its own, opened by the
// daemon with OpenAppend (O_APPEND) and inherited, so a daemon restart never
// breaks its output. The daemon cannot make the child write elsewhere, so
// rotation cannot rename the file away: it moves bytes out of the front of
// the file the child keeps appending to. A Log does that, in one goroutine,
// woken by Notify (the daemon calls it from its inotify watch of the log):
// a quiet log costs nothing, and a log over its cap is looked at on the
// first write event, not on a timer. A rotation's own fallocate and
// truncate raise IN_MODIFY on output.log too; each costs one more pass
// that finds nothing to do (one fstat).
//
// # Files and the cap
//
// Options.Keep (log_keep) counts the files kept, output.log included:
// output.log.1 (the newest rotated) … output.log.<Keep-1>; with Keep 1
// there are none and output.log is a window over the newest bytes. Each
// rotated file holds one chunk: log_max_size rounded down to whole
// filesystem blocks (a log_max_size under one block, usually 4 KiB, is
// raised to one block). A pass runs while output.log holds more than
// log_max_size: it removes the rotated files the new chunks will push out,
// copies the oldest chunks of output.log into new files inside the kernel
// (copy_file_range; through a 64 KiB buffer where that is refused), renames
// them into place as the older files shift up, and takes the chunks out of
// output.log. No pass holds more than that buffer in memory.
//
// After a pass, output.log holds at most log_max_size bytes and every
// rotated file at most one chunk, so the files hold at most
// log_max_size × log_keep bytes (ModePunch: one block more, for the block
// its last punch ended in). While a pass runs, the child keeps writing, and
// the chunks being copied are on disk twice until they leave output.log: a
// writer faster than the rotation holds the files above the cap by what it
// writes during one round of the pass (a round copies at most Keep-1
// chunks, and each looks at the size anew), plus the chunks in flight.
// When the writer is so far ahead that the chunks to rotate would not all
// fit in the rotated files, the oldest bytes are removed without being
// copied (Stats.Dropped): the cap holds whatever the write rate, and what
// is lost is only what the cap would not keep. (Measured with `yes` for
// 20 s against 10 MiB × 3 on two shared cores: peaks of 60-120 MiB on ext4
// and 85-220 MiB on tmpfs while it wrote at 450-1100 MB/s, under the cap
// once it stopped.)
//
// Concatenating output.log.<Keep-1> … output.log.1, output.log gives back
// exactly the bytes the child wrote, from the oldest kept on (in ModePunch,
// output.log from its first data byte on). Files are cut at block
// boundaries, not at line ends: a line may begin in one file and end in the
// next. The readers here join them.
//
// # Taking bytes out of output.log
//
// How the chunk leaves output.log depends on the filesystem; the first
// rotation finds out and Stats.Mode says which:
//
//   - ModeCollapse (ext4, XFS): fallocate(FALLOC_FL_COLLAPSE_RANGE) removes
//     the chunk and shifts the rest of the file down, under the inode lock
//     the child's O_APPEND write also takes, so its next write lands at the
//     new end. Nothing written is lost, ever.
//   - ModePunch (tmpfs, btrfs and others without COLLAPSE_RANGE):
//     fallocate(FALLOC_FL_PUNCH_HOLE) frees the chunk's blocks; the file
//     keeps its size, with a hole where the chunk was. Nothing is lost at
//     rotation, and the disk space is bounded as above, but the apparent
//     size keeps growing. Once it reaches Options.ResetSize (by default 64
//     times log_max_size, at least 64 MiB) the pass resets the file: it
//     rotates chunks out as usual, copies the rest into a short chunk, and
//     then, holding the readers' lock, copies what came meanwhile up to the
//     size a write in progress settles at (lseek SEEK_HOLE, which waits for
//     the inode lock a write holds on tmpfs, ext4, XFS and btrfs, where
//     fstat can see a write half done), until nothing more came, and
//     truncates output.log to zero. A write the child starts between that
//     last look and the truncate is lost, whole: no file operation lets the
//     kernel "truncate only if nothing was appended". That window is two
//     system calls wide, once per ResetSize bytes written. When more keeps
//     coming (the writer is faster than the copies), the reset is put off
//     to a later pass, and what it copied is rotated out as usual, unless
//     the apparent size has reached 16 × ResetSize: then it truncates and
//     loses what came after its last copy (Stats.ResetLost). Resets are
//     counted (Stats.Resets). A plain reader of output.log sees the hole as
//     NUL bytes; the readers here skip it.
//   - ModeTruncate (neither operation): every rotation is such a reset,
//     never put off (only a truncate shrinks the file), with the same
//     window of loss at each, and the rest lost when the writer outpaces
//     the copies (Stats.ResetLost); most resets make two files (a full
//     chunk and the rest), so fewer bytes are kept than the cap allows.
//
// A crash of the daemon between installing a chunk as output.log.1 and
// taking it out of output.log leaves it in both: it is duplicated, never
// lost. (The rotated file a pass pushes out is removed before its copies,
// so a pass that fails midway has removed it early.) A rotation's temporary file (output.log.rotating.N) left by a crash
// is removed by the next Open; its bytes are still in output.log. Rotated
// files are not fsynced: a power loss can lose the page-cache content of
// the newest rotated files, as it loses the child's own recent writes.
//
// # Readers
//
// A Reader reads the log as one stream across the files, by stream offset,
// while rotations happen: a rotation takes the Log's lock exclusively while
// it collapses, punches, truncates or renames, and a Reader holds it shared
// while it maps its offset to a file and reads from output.log, so it never
// reads a byte twice or skips one that is still on disk. It is what a
// follower (sessionctl logs -f) uses: read to io.EOF, wait for the next
// write event, read again. A follower that reads output.log with a
// descriptor of its own instead cannot tell from the file alone how far a
// collapse moved its bytes (the size going down says only that a rotation
// happened); it should use a Reader, or re-position with NewReader. The
// one exception is a reset that loses bytes: a Reader may have read some
// of them before the truncate, which gives their stream offsets to the
// bytes written next. The Reader then goes on at the first byte written
// after the truncate, so it skips none of those: it has read bytes the
// disk no longer has, and its Offset goes back by as many. TailLines
// gives the last lines across the files (for logs -n and the handoff's
// log_tail) with bounded memory.
//
// # Times
//
// The child's bytes carry no times, and no one sees them pass, so a Log
// with Options.Stamps keeps output.log.stamps beside the log: Seen(t),
// called by the daemon at each inotify write event, records that the
// bytes written since the last call (one write burst) were seen at t.
// Records are (stream offset, time) pairs of 16 bytes; bursts less than a
// millisecond apart share one, extended in place. Every rotation that
// takes bytes off the disk appends the oldest offset still kept, which is
// how the next Log (after a daemon restart) gives the files the same
// stream offsets, so that the records still fit. The file is bounded: at
// DefaultStampsMax records it is rewritten with only the records of bytes
// still kept, the oldest merged in pairs (taking the earlier time) down
// to half. Stamps reads it for a reader, TimeOf and OffsetAt map offsets
// to times and back; NewReaderAt and LineStart start a reader at a time.
// Bytes found in a log that has no stamp file are stamped as seen at Open
// (a new session's first output), or of unknown time with
// Options.PriorUnknown (a session adopted from a daemon that kept none).
// Records are not synced; a crash of the daemon between a rotation and
// its record, or inside a copy-and-truncate reset that lost bytes, leaves
// the times of a chunk off by what moved.
//
// Only one Log may rotate a given path at a time; after a daemon restart
// the new Log takes over the files the old one left, in any mode.
package logfile
