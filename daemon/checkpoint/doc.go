// Package checkpoint is sessiond's git plumbing for checkpoints: snapshots of
// a project's whole work tree that never touch the user's branch, index,
// stash or files, and that can be listed, looked up, restored, pruned and
// measured.
//
// # Calls
//
// A daemon keeps one Checkpointer. What holds for every call is in Options
// (the state dir, retention, the left-out directory names, timeouts); what
// may differ per call is in the request: Take(ctx, TakeRequest{Dir,
// SessionID, Mode, Message, Turn, MaxFileSize, Ignore, Changes, FullEvery,
// FullAfter, ShadowRoot, Credential}), List, Lookup, Restore, Prune and
// Stats with requests of their own. Operations on one repository (keyed by
// its common git dir) run one at a time whatever the requests, operations
// on different repositories in parallel.
//
// # Mode ref: a checkpoint
//
// A checkpoint of mode "ref" (the default) is a commit on
// refs/sessiond/checkpoints/<session>, moved by compare-and-swap with a
// reflog, whose parent is the session's previous checkpoint (else HEAD,
// else none on an unborn branch). Its tree is what git add -A would make of
// the work tree from a private copy of the user's index (found with git
// rev-parse --git-path index, so linked worktrees work): tracked files as
// they are in the work tree, untracked ones unless ignored, left out
// (untracked files over TakeRequest.MaxFileSize, default 10 MiB, and
// untracked directories named in Options.LeaveOut, default
// DefaultLeaveOut) or in a nested repository (which is a gitlink). A
// checkpoint whose tree equals the previous one is skipped. The ignore
// rules are the project's .gitignore files, its info/exclude and the
// request's Ignore patterns, the same the watcher uses; the user's global
// excludes file does not apply, so that what counts as the project's work
// does not depend on whose HOME the daemon has. Mode "commit" instead
// commits work in progress on the current branch with the user's index and
// ignore rules, as the source documents do; it refuses a detached HEAD and
// a merge, rebase or similar in progress.
//
// # Incremental checkpoints
//
// A full scan stats the whole work tree (git add -A), about what git stash
// create costs. When the caller passes the watcher's record of the paths
// changed since the session's last checkpoint (daemon/watch's
// Watch.Changes) and it is complete, the checkpoint costs what changed
// instead: the user's index entries under the changed paths are copied (in
// Go, stat data included) into a small index, git add -A runs on those paths
// only, with the same exclude pathspecs for large files and left-out
// directories, computed by the same code, and the previous checkpoint's tree
// gets those subtrees replaced; only the trees from the root down to them
// are written (git mktree). Both give the same tree for the same work tree;
// a test compares them on random edit sequences. Nested repositories and
// tracked files in directories the watcher does not watch (ignored or left
// out) are re-read every time, since they change where no event comes from.
//
// A full scan runs instead, and Result.FullReason says why, when: there is no
// record or it is incomplete (events lost, directories polled); there is no
// earlier checkpoint of the session since the process started (the state
// is kept in memory); the user's index changed (a git add, a commit: its
// size, times or checksum); a .gitignore is among the changed paths, or
// info/exclude, the Ignore patterns, MaxFileSize or LeaveOut changed; the
// project is a subdirectory of its work tree (the record does not cover the
// rest); the index is split or sparse, or has assume-unchanged or
// skip-worktree entries under the changed paths; more than 5000 paths
// changed; and at least every FullEvery incremental checkpoints
// (DefaultFullEvery, 100) or FullAfter after the last full scan
// (DefaultFullAfter, one hour) — request fields, defaulting to Options.
// Any failure of the incremental path falls back to the full scan too.
//
// # Running git safely in a repository sessiond did not write
//
// Every git process runs through daemon/proc (so the daemon's reaper leaves
// its exit status alone), with a timeout (SIGTERM first, so git removes its
// lock files), its stderr in the returned error, and errors wrapping
// sentinels such as ErrNoGit, ErrCorruptIndex, ErrReadOnly, ErrDiskFull. It
// gets a small, clean environment (PATH, HOME, LC_ALL=C, no prompts, no
// optional locks, GIT_CONFIG_NOSYSTEM=1 and GIT_ATTR_NOSYSTEM=1: nothing else
// of the daemon's, so no GIT_DIR, GIT_ASKPASS or GIT_EXTERNAL_DIFF reaches
// it) and config overrides given as GIT_CONFIG_KEY_n, as strong as -c, that
// turn off everything that would run a program named by the repository's or
// the user's config: hooks (core.hooksPath=/dev/null, the
// reference-transaction hook included), core.fsmonitor, the pager and
// editors, askpass and credential helpers, core.sshCommand and every
// transport (protocol.allow=never), signing and signature checks, automatic
// gc and maintenance. Filter drivers cannot be named by wildcard: every
// driver the config defines (found with git config --list, cached until one
// of its files changes) gets empty clean, smudge and process commands, which
// git 2.39 takes as "no filter", and required=false, without which that is
// fatal; a checkpoint stores the work tree's bytes and a restore writes them
// back. External diff and textconv never run: only plumbing diffs without
// patches are used. Tested with git 2.39.5: a repository whose config names
// a program in each of these places runs none of them through any call.
//
// With a Credential (uid, gid, groups, HOME), every git process of the call
// runs as that user (SysProcAttr.Credential), so a root daemon's git passes
// git's own ownership check without safe.directory, and what git writes
// (objects, refs, reflogs, the shadow repository) is the user's. What the
// daemon itself does for the call follows: the user's index is read only if
// the user may read it (never through a symlink, only a regular file);
// temporary indexes and excludes files are in private directories owned by
// the user; a restore removes files by opening each directory from its
// parent without following symlinks, and only where the user could.
//
// # Non-git projects
//
// A project outside any git work tree gets a bare shadow repository at
// ShadowRoot/<project-id>.git (ShadowRoot per request, default
// Options.StateDir/shadow; a root daemon keeps one per user, which the call
// creates owned by the user) with the project as its work tree; nothing is
// created inside the project. Nothing is tracked there: the ignore, size
// and left-out rules apply to every file at every checkpoint; the shadow
// repository's own index only keeps the stat cache.
//
// # Messages
//
// A checkpoint's subject is a line of the session's history: the agent's
// turn when the request names one (TakeRequest.Turn, the prompt's first
// line shortened to 60 characters) and the files changed, the first three
// and a count ("Turn "fix the login": 3 files changed: a.go, b.go, c.go");
// the caller's message is the body; Sessiond-* trailers (session, files
// changed and the first eight of them, turn, depth, oldest, folded and
// former ids) make each checkpoint self-describing, so List reads all of a
// project's checkpoints, across sessions, with one git log over the
// checkpoint refs that stops at the user's branches, tags and remote refs.
//
// # Retention and ids that stay true
//
// A session ref keeps its newest Options.Keep checkpoints (DefaultKeep,
// 100) that are at most Options.MaxAge old (DefaultMaxAge, 30 days), and
// always its newest one, which is what the session's handoff names; Prune
// can also pin checkpoints (those a handoff or the session state cites).
// The others are folded into the next kept one, which then carries their
// changes: the kept commits after the first folded one are re-created with
// the same trees, messages and dates, so everything the ref reaches stays
// complete. Take folds its own ref in batches (once it holds a quarter more
// than Keep, or its oldest checkpoint is a quarter older than MaxAge), and
// once a day per repository applies the age limit to every ref. A
// rewritten checkpoint records its former ids (Checkpoint.FormerIDs,
// Sessiond-Was) and the ids folded into it (Sessiond-Folded-Id, up to
// 5000): Lookup finds the checkpoint any id ever handed out names now,
// Restore accepts current and former ids, and the id of a folded checkpoint
// while git still has its commit (its reflog entry keeps it until git
// expires it, gc.reflogExpireUnreachable), after which it fails with
// ErrFolded naming the checkpoint that holds its changes.
//
// Stats counts the checkpoints, the objects only checkpoint refs reach
// (git rev-list --objects over them, not over the user's refs) and their
// sizes as stored and uncompressed (git cat-file --batch-check), and names
// the largest content checkpoints leave out of the work tree now.
//
// # Restore
//
// Restore first checkpoints the current work tree (session "restore"),
// then diffs that tree against the target: it deletes the paths the target
// lacks and writes the differing ones with checkout-index from a private
// index, so untouched files keep their stat data and ignored files stay.
package checkpoint
