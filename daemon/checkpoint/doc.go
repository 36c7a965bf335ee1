// Package checkpoint is sessiond's git plumbing for checkpoints: snapshots of
// a project's whole work tree that never touch the user's branch, index,
// stash or files, and that can be listed, restored and pruned.
//
// A checkpoint (mode "ref", the default) is made with a private copy of the
// repository's index (found with git rev-parse --git-path index, so linked
// worktrees work): the copy keeps git's stat cache, so only changed files are
// hashed; git add -A on it honours .gitignore; write-tree gives the tree,
// which is skipped if it equals the previous checkpoint's; commit-tree makes
// a commit whose parent is the session's previous checkpoint (else HEAD,
// else none on an unborn branch); and update-ref moves
// refs/sessiond/checkpoints/<session> by compare-and-swap, with a reflog.
// Commit messages carry Sessiond-* trailers (session, files changed, depth),
// so List reads all checkpoints of a project, across sessions, with a single
// git log over the checkpoint refs that stops at the user's branches, tags
// and remote refs. Untracked files over MaxFileSize and untracked dependency or
// cache directories (node_modules, .venv, target, ...) are left out through
// exclude pathspecs and reported; no ignore file of the user's is written.
// Mode "commit" instead commits work in progress on the current branch with
// the user's index, hooks and signing disabled, as the source documents do;
// it refuses a detached HEAD and a merge, rebase or similar in progress. A
// project outside any git work tree gets a bare shadow repository under the
// state dir (shadow/<project-id>.git) with the project as its work tree;
// nothing is created inside the project.
//
// Every git process runs through daemon/proc (so the daemon's reaper leaves
// its exit status alone), with hooks off, no prompts, no optional locks,
// LC_ALL=C, a timeout (SIGTERM first, so git removes its lock files), and
// its stderr in the returned error; errors wrap sentinels such as ErrNoGit,
// ErrCorruptIndex, ErrReadOnly and ErrDiskFull. A Checkpointer runs one
// operation at a time per repository (keyed by the common git dir).
//
// Restore first checkpoints the current work tree (session "restore"), then
// diffs that tree against the target: it deletes the paths the target lacks
// and writes the differing ones with checkout-index from a private index, so
// untouched files keep their stat data and ignored files stay.
//
// Retention: a session ref keeps Keep checkpoints. Once it holds a quarter
// more, Take (or Prune at any time) rewrites the chain: the kept commits are
// re-created with the same trees, messages and dates, the oldest kept one
// parented on the base of the oldest dropped one, so it carries the folded
// changes. This is the simplest rewrite under which everything the ref
// reaches is still complete (no dangling parent, nothing git gc could drop
// while the ref exists). It changes the ids of kept checkpoints; each
// rewritten commit records its former ids in Sessiond-Was trailers, and
// Restore accepts those. The folded commits stay reachable from the ref's
// reflog until git expires the entries (gc.reflogExpireUnreachable).
package checkpoint
