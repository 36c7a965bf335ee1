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
// first write event, not on a timer.
//
// # Files and the cap
//
// Options.Keep (log_keep) counts the files kept, output.log included:
// output.log.1 (the newest rotated) … output.log.<Keep-1>. Each rotated
// file holds one chunk: log_max_size rounded down to whole filesystem
// blocks. A pass runs while output.log holds more than log_max_size: it
// copies the oldest chunk of output.log into output.log.1 inside the kernel
// (copy_file_range; a 64 KiB buffer where that is refused), shifts the older
// files up, removes the one pushed past Keep, and takes the chunk out of
// output.log. No pass holds more than that buffer in memory. After a pass,
// output.log holds at most log_max_size bytes and every rotated file at most
// one chunk, so the files hold at most log_max_size × log_keep bytes
// (ModePunch: one block more, for the block its last punch ended in).
// Between passes output.log grows by what the child writes in the meantime,
// which the next write event starts the next pass for. When the child
// writes faster than a pass copies, the chunks that would be pushed past
// the last file within the same pass are removed without being copied
// (Stats.Dropped): the cap holds whatever the write rate, and what is lost
// is only what the cap would not keep. A log_max_size smaller than one
// block (usually 4 KiB) is raised to one block.
//
// Concatenating output.log.<Keep-1> … output.log.1, output.log gives back
// exactly the bytes the child wrote, from the oldest kept on. Files are cut
// at block boundaries, not at line ends: a line may begin in one file and
// end in the next. The readers here join them.
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
//     copies what is left into output.log.1 and truncates output.log to
//     zero. A write the child completes between that last copy and the
//     truncate is lost: each write is whole (the truncate and an O_APPEND
//     write exclude each other), so the loss is of whole writes, at most
//     those made in the few microseconds between two system calls, once per
//     ResetSize bytes written. A writer that adds more than a chunk inside
//     the reset's final window loses the rest too, and that is counted
//     (Stats.ResetLost). Resets are counted (Stats.Resets).
//     A plain reader of output.log sees the hole as NUL bytes; the readers
//     here skip it.
//   - ModeTruncate (neither operation): every rotation is such a reset, with
//     the same window of loss at each.
//
// A crash of the daemon between installing a chunk as output.log.1 and
// taking it out of output.log leaves it in both: it is duplicated, never
// lost. A rotation's temporary file (output.log.rotating.N) left by a crash
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
// happened); it should use a Reader, or re-position with NewReader. TailLines
// gives the last lines across the files (for logs -n and the handoff's
// log_tail) with bounded memory.
//
// Only one Log may rotate a given path at a time; after a daemon restart
// the new Log takes over the files the old one left, in any mode.
package logfile
