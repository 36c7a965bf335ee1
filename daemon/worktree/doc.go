// Package worktree gives parallel sessions on one repository a git
// worktree each: a directory outside the repository, checked out on a new
// branch sessiond/NAME from HEAD or a given ref, with the repository's
// .worktreeinclude files copied in, the worktree_setup commands run, and a
// port of port_range held for it while a session runs there.
//
// A Manager keeps the index of the worktrees it made (worktrees.json in
// the daemon's state dir, written atomically), so that a daemon restart
// knows every worktree, which session holds which port, and which worktree
// a crash left half made (Recover rolls those back). Every git command runs
// through package checkpoint's hardened git, as the worktree's user: no
// hook, filter or other program named by the repository's config runs, and
// a root daemon makes a user's worktree with that user's rights, in that
// user's own state directory (~/.local/state/sessiond/worktrees by
// default). Files are copied and directories made with the user's
// filesystem identity (state.RunAs).
//
// A worktree is kept when its session ends (the hand-back: Status says its
// branch, base, commits ahead, uncommitted files and the command to review
// it) until Remove, which refuses uncommitted work unless forced, and
// deletes the branch only when it holds no commit of its own. A directory
// deleted by hand is pruned from git's list as git worktree prune does, and
// made again on its branch by the next Prepare of that name.
package worktree
