// Package watch tells the daemon what changed in a project: which files were
// created, written, removed or renamed, the last file edited and when the
// project was last active, and whether anything changed since a checkpoint.
//
// It watches every directory of a project with inotify, including the ones
// that appear later (a new directory is listed after its watch lands, so the
// files made in it before then are not missed), and skips what git would
// skip: .git internals, .sessiond, the .gitignore files at every level,
// .git/info/exclude and the spec's extra patterns. An ignored directory is
// never watched at all, so node_modules costs no watch.
//
// Ignores are decided by git itself, through one long-lived
// `git check-ignore --stdin -z --verbose --non-matching` per repository of
// the project, rather than by a Go matcher: git is the reference (the
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
// .gitignore changes, since git caches the files it has read. Nested
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
// Nothing polls while nothing changes. When inotify drops events (queue
// overflow) every watch rescans its tree and counts the files modified since
// it started. When a watch cannot be added because the max_user_watches (or
// descriptor) limit is reached, the watch goes on with what is watched and
// rescans the rest every Options.Rescan by comparing entries and times; the
// log names the sysctl that fixes it. A removed or moved project root stops
// its watch; unreadable directories, symlinks (never followed) and files
// replaced by directories are logged and skipped.
package watch
