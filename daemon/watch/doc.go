// Package watch tells the daemon what changed in a project: which files were
// created, written, removed or renamed, the last file edited and when the
// project was last active, whether anything changed since a checkpoint,
// and, for incremental checkpoints, exactly which paths changed since a
// mark (Watch.Changes).
//
// It watches every directory of a project with inotify, including the ones
// that appear later (a new directory is listed after its watch lands, so the
// files made in it before then are not missed), and skips what git would
// skip: .git internals, .sessiond, the .gitignore files at every level,
// .git/info/exclude and the spec's extra patterns; and, when Options.LeaveOut
// names them, dependency and cache directories (node_modules, .venv,
// target, ...) even when no ignore rule does — the list checkpoints leave
// out, so that files_changed, last_file_edited and checkpoints agree on what
// counts as the project's work. A left-out or ignored directory is never
// watched, so node_modules costs no watch, unless it holds a tracked file
// (a committed dist/, a target/ with a tracked file in it): then the
// directories on the way to that file are, and an edit of it counts, as it
// does for a checkpoint. The tracked files in a left-out directory are
// asked of git's index (git ls-files) the first time the scan meets it.
//
// Ignores are decided by git itself, through one long-lived
// `git check-ignore --stdin -z --verbose --non-matching --no-index` per
// repository of the project, rather than by a Go matcher: git is the
// reference (the
// checkpoints are `git add -A`, so what they leave out is exactly what the
// watcher leaves out), nested .gitignore files, negations, `**`, directory-only
// patterns and tracked files that match a pattern all come right without a
// partial reimplementation, and DESIGN drives git through its binary anyway.
// Of the Go libraries, sabhiram/go-gitignore is unmaintained since 2021 and
// handles no nested files, and go-git's matcher would bring in most of go-git
// for one feature. A directory that is not a git work tree is checked against
// an empty repository made in a temporary directory (git --work-tree=project),
// which still honours its .gitignore files. The extra patterns are given as
// core.excludesFile (so the user's global excludes file, which depends on the
// daemon's HOME, does not apply). Questions are batched a directory level at a
// time; the coprocesses stop after a short idle time and restart when a
// .gitignore changes, since git caches the files it has read. --no-index
// because with the index check-ignore walks all of it for every path (to
// refuse paths in submodules): milliseconds a question in a large
// repository; tracked files, to which ignore rules do not apply, are told
// apart with git ls-files -c -i --exclude-standard, read when the coprocess
// starts, which it does again once the repository's index changed. The
// watcher never watches .git, so it stats info/exclude and the index at
// every batch: a changed info/exclude re-reads the tree with the new rules.
// Every git command of the watcher runs with hooks, fsmonitor and
// transports off, a clean environment and no system or global config.
// Nested
// repositories (submodules, vendored clones) get a checker of their own, as
// git will not answer for paths inside a submodule.
//
// One Hub serves every project with a single inotify instance: the kernel
// allows 128 instances per user by default and the daemon may watch a
// thousand projects. One goroutine reads it and hands each event, by its
// directory, to the watches that own that directory; it never adds watches
// (each watch's own goroutine does), as fsnotify requires. A watch gathers
// events for Options.Coalesce, so a burst on one path counts once.
//
// The record of changes behind Watch.Changes holds every path created,
// written, removed, renamed or whose mode changed (a chmod is no edit for the
// stats, but a checkpoint stores modes), directories that appeared, went or
// replaced a file, and left-out directories that appeared or went, each with
// the sequence number of its last change, up to Options.MaxRecord paths
// (DefaultMaxRecord). A Mark is a sequence number: Changes returns the paths
// changed after one and a new mark, read at one instant, and says whether the
// record is complete. It is not after lost events, past an inotify limit,
// when a directory could not be watched or listed, past MaxRecord, or once
// the root went or the watch was closed; the caller then checkpoints by a
// full scan. Changes first waits until every change made before the call
// is handled: it creates a file in a directory the hub watches itself and
// waits for its event (inotify keeps one instance's events in order, and the
// one reader dispatches them in that order), then has the watch handle its
// queue without the coalescing delay. A directory whose name another
// directory took (moved away and made again, a rescan meeting a moved one)
// is told by its device and inode, and its watches are dropped before the
// new one is watched: inotify gives a moved inode the same watch under both
// names. Limits: a write through a hard link from outside the project, or
// to a file mapped into memory, makes no inotify event.
//
// Nothing polls while nothing changes. When inotify drops events (queue
// overflow) every watch rescans its tree and counts the files modified since
// it started. When a watch cannot be added because the max_user_watches (or
// descriptor) limit is reached, the watch goes on with what is watched and
// rescans the rest every Options.Rescan by comparing entries and times; the
// log names the sysctl that fixes it. A removed or moved project root stops
// its watch; unreadable directories, symlinks (never followed) and files
// replaced by directories are logged and skipped.
package watch
