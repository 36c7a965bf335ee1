package daemon

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// rawCalls are the calls that open, stat, make, change or run something
// by path. In the daemon's packages a path a user can influence goes only
// through daemon/state (Project for the project's tree, Files for the rest,
// Files.Do for code that walks a user's tree itself), and a process for a
// user's project is started with that user's credential; every other call
// below is on the daemon's own files or its own processes, and is named in
// sanctioned with the reason it is safe.
var rawCalls = map[string][]string{
	"os":       {"Open", "OpenFile", "ReadFile", "Stat", "Lstat", "MkdirAll", "Mkdir", "Chmod", "Chown", "Lchown", "WriteFile", "ReadDir", "Create", "CreateTemp", "MkdirTemp", "Remove", "RemoveAll", "Rename", "Symlink", "Readlink", "Truncate", "Chtimes"},
	"exec":     {"Command", "CommandContext", "LookPath"},
	"filepath": {"EvalSymlinks", "Glob", "Walk", "WalkDir"},
	"unix":     pathSyscalls,
	"syscall":  pathSyscalls,
}

// pathSyscalls are the system calls, in unix and syscall, that take a path.
var pathSyscalls = []string{"Open", "Openat", "Openat2", "Stat", "Lstat", "Fstatat", "Mkdir", "Mkdirat", "Chmod", "Fchmodat", "Chown", "Fchownat", "Lchown", "Unlink", "Unlinkat", "Rename", "Renameat", "Renameat2", "Readlink", "Readlinkat", "Symlink", "Symlinkat"}

// sanctioned are the functions, by file, allowed raw calls, and why.
var sanctioned = map[string]struct {
	why   string
	funcs []string
}{
	"checkpoint/checkpointer.go":        {"signatures of the repository's git directory, git having resolved it with the user's rights: nothing read or shown", []string{"cachedRepo.valid", "dirSig"}},
	"checkpoint/credential.go":          {"every file made, moved, timed or removed inside asUser (state.Files.Do): the credential's user's rights; the user's index is read through state.Files (openUserFile)", []string{"createFile", "mkdirAll", "mkdirTemp", "removeAll"}},
	"checkpoint/mtime_other.go":         {"the times of a file createFile has just made and holds open, inside asUser", []string{"setMtime"}},
	"checkpoint/facts.go":               {"Lstat of paths git (run as the user) reported, for their type: nothing read or shown", []string{"Facts", "inWorkTree"}},
	"checkpoint/filters.go":             {"a signature (size, time) of the repository's attributes file, never its content", []string{"statSig"}},
	"checkpoint/fullscan.go":            {"signatures of paths git reported; the index itself is read through openUserFile", []string{"Checkpointer.alwaysPaths", "indexSig"}},
	"checkpoint/git.go":                 {"the one git runner of checkpoints, worktrees and facts: the credential's user, a clean environment, no program of the repository's", []string{"git"}},
	"checkpoint/incremental.go":         {"Lstat of the paths the watcher reported, for their type and size only", []string{"Checkpointer.incremental", "repo.changedPaths"}},
	"checkpoint/leftout.go":             {"walks of the user's untracked tree, inside state.Files.Do: the user's rights", []string{"Checkpointer.untracked", "leftOutFiles", "searchUntracked", "under"}},
	"checkpoint/repo.go":                {"git's own state files of the resolved repository (in progress markers), and the shadow repository made inside asUser", []string{"repo.inProgress", "repo.initShadow", "resolve"}},
	"checkpoint/safefs.go":              {"a restore's look at and removal of what the checkpoint did not hold, inside asUser: each directory opened from its parent without following a symlink, the kernel checking each step as the session's user's; types only, nothing read or shown", []string{"openParentBeneath", "removeBeneath", "lstatBeneath", "walkBeneath"}},
	"checkpoint/stats.go":               {"measure runs inside state.Files.Do", []string{"measure"}},
	"checkpoint/temps.go":               {"the removal of an earlier daemon's temporary directories, inside asUser (state.Files.Do): the user's rights, only the user's own", []string{"tempNames.sweep"}},
	"checkpoint/take.go":                {"its own temporary index, removed and renamed inside asUser", []string{"Checkpointer.takeRefOnce"}},
	"checkpoint/tree.go":                {"git's batch object reader, started as git is (the credential's user)", []string{"repo.startBatch"}},
	"identity/identity.go":              {"/etc/passwd, the local account database: a fixed system path, read for an account's login shell", []string{"loginShell"}},
	"logfile/log.go":                    {"the session logs in the daemon's own state dir", []string{"Log.DiskUsage", "Log.takeOver"}},
	"logfile/open.go":                   {"the session logs in the daemon's own state dir (every open of logfile goes through openFile)", []string{"openFile"}},
	"logfile/renamed.go":                {"the session logs in the daemon's own state dir", []string{"inode"}},
	"logfile/rotate.go":                 {"the session logs in the daemon's own state dir", []string{"Log.copyChunk", "Log.installLocked", "Log.resyncLocked", "Log.rotateChunks", "Log.trim", "resetCopy.fail"}},
	"logfile/stampfile.go":              {"the session logs' stamp files in the daemon's own state dir", []string{"readStampFile", "stampFile.rewriteLocked"}},
	"logkeep/client_linux.go":           {"the log keeper: the daemon's own executable, its log in the daemon's own state dir", []string{"Client.spawn"}},
	"logkeep/keeper_linux.go":           {"the keeper's own socket in the daemon's state dir", []string{"Serve"}},
	"logs/watcher.go":                   {"a terminal log in the daemon's own state dir", []string{"Watcher.WatchTerminalLog"}},
	"memory/exepages/exepages_linux.go": {"/proc/self of the process: the mappings of its own executable", []string{"readOnlyRanges"}},
	"metrics/collectors.go":             {"/proc of the daemon itself", []string{"processFamilies"}},
	"metrics/rss_linux.go":              {"/proc of the daemon itself", []string{"residentBytes"}},
	"notify/command.go":                 {"the session's log in the daemon's state dir, appended to by a command's output", []string{"commandSink.send"}},
	"notify/desktop.go":                 {"the fixed paths of the desktop notifiers' executables", []string{"checkDesktop"}},
	"notify/run.go":                     {"the one runner of notification commands: the session user's credential, a process group, a timeout", []string{"process.run"}},
	"cgroup/cgroupfs/group_linux.go":    {"the cgroupfs (v2 and v1 hierarchies) of the daemon's own cgroups, and /proc/self/mountinfo: nothing a user can name", []string{"Group.Start", "Group.enterV1", "procsUnder", "writeString", "fileExists", "isDir", "ReadMounts", "ReadString"}},
	"cgroup/group_linux.go":             {"the cgroupfs (v2 and v1 hierarchies) of the daemon's own cgroups: nothing a user can name", []string{"Host.New"}},
	"cgroup/host_linux.go":              {"the cgroupfs, /proc/self/cgroup and systemd's /run/systemd/system: the host's, nothing of a user's", []string{"Host.takeWhole", "Host.makeBase", "Host.controllers", "v1Base", "v1Own", "Host.Sweep", "isDir"}},
	"proc/cloexec.go":                   {"/proc/self/fd", []string{"CloseOnExec"}},
	"proc/libexec.go":                   {"sessiond's own programs beside its executable or in ../libexec/sessiond, never a user's path", []string{"Libexec", "trustedLike"}},
	"proc/proc_linux.go":                {"/proc of processes and the kernel's boot id: nothing of a user's files", []string{"BootID", "SessionsByEnv", "allStats", "childrenOf", "readProcFile", "readStatBuf"}},
	"proc/spawn.go":                     {"the one spawner of sessions' commands (the user's credential) and /dev/null; the lookup of the command", []string{"Spawn", "executable"}},
	"proc/spawner_linux.go":             {"/proc/thread-self/fd of the spawner's own thread, to empty its descriptor table; the commands it forks are Spawn's", []string{"closeAllButPoller"}},
	"session/recover.go":                {"the session's log and record in the daemon's own state dir, for their last write", []string{"Session.lastSign"}},
	"session/agent.go":                  {"the agent's files a daemon of the session's own user wrote in the session's directory of its state dir, removed at the end", []string{"Session.removeAgentFiles"}},
	"session/environ.go":                {"the environment kept in the session's directory, in the daemon's own state dir", []string{"Session.saveEnviron", "readEnviron"}},
	"session/env.go":                    {"the handoff archive in the daemon's own state dir", []string{"Session.HandoffFile"}},
	"session/sidecar.go":                {"a sidecar's log in the daemon's own state dir", []string{"Session.startSidecar", "readyCheck"}},
	"session/start.go":                  {"preflight commands, started with the session user's credential in a process group of their own", []string{"Session.preflight"}},
	"sessions/api.go":                   {"an ended session's directory in the daemon's own state dir", []string{"Service.remove"}},
	"sessions/hooks.go":                 {"the sessionctl installed beside the daemon, or on the daemon's own PATH", []string{"FindSessionctl", "isExecutable"}},
	"sessions/recover.go":               {"the daemon's own state dir", []string{"Service.Recover"}},
	"socket.go":                         {"the daemon's own socket", []string{"Daemon.shareSocket"}},
	"term/client.go":                    {"the terminal holder: the daemon's own executable, its session directory", []string{"Start"}},
	"term/helper.go":                    {"the holder's program: the daemon's own executable, resolved", []string{"holderCommand"}},
	"term/files.go":                     {"the holder's files in the session's directory", []string{"removeStaleExit"}},
	"term/holder.go":                    {"the holder's own socket and stdio in the session's directory", []string{"holder.setUp", "listen", "quietStdio"}},
	"term/logfile.go":                   {"the terminal log, which the holder alone writes, in the session's directory", []string{"logFile.open", "logFile.rotate"}},
	"watch/hub.go":                      {"the watcher's own temporary directories (its named one removed only when it is a directory of the daemon's user, as Close removes it; a user's made by the daemon in its own, where only it writes, and handed to the user; what is in it made with the user's rights), /proc/sys; readDirUnsorted is called inside scans, which run in state.Files.Do", []string{"Hub.Close", "Hub.barrierDir", "Hub.emptyRepo", "Hub.makeBarrier", "Hub.namedTemp", "Hub.tempDir", "Hub.userTemp", "ownedDir", "readDirUnsorted", "readSysctl"}},
	"watch/ignore.go":                   {"the watcher's git, started as the project's user with a bound; signatures of the repository's exclude and index; Lstat of the repository's layout, in scans and in Hub.Prepare, which run in state.Files.Do", []string{"checker.close", "checker.configure", "checker.lsFiles", "checker.start", "findRepoTop", "ignorer.validRepo", "plainRepo", "statSig"}},
	"watch/prepare.go":                  {"the project root's entries, listed in state.Files.Do (the project's user's rights), as a scan lists them", []string{"Hub.Prepare"}},
	"watch/scan.go":                     {"Lstat inside scans, which run in state.Files.Do", []string{"lstatDir"}},
	"watch/watch.go":                    {"Lstat of paths inotify reported and of the watched root, for their type", []string{"Watch.handleBatch", "Watch.rootAlive"}},
	"worktree/create.go":                {"the worktree's directories, made and removed inside state.RunAs as the user", []string{"Manager.Prepare", "Manager.reuse", "removeDir", "removeEmptyParent"}},
	"worktree/git.go":                   {"the repository's top, as git (run as the user) named it", []string{"mainWorkTree"}},
	"worktree/include.go":               {"the copy of .worktreeinclude's files, inside state.RunAs as the user", []string{"copyOne", "includedFiles", "mkParents"}},
	"worktree/recover.go":               {"Lstat of worktree paths the daemon's own index holds", []string{"Manager.Recover"}},
	"worktree/remove.go":                {"Lstat of a worktree path the daemon's own index holds", []string{"Manager.Remove"}},
	"worktree/service.go":               {"Lstat of worktree paths the daemon's own index holds", []string{"Service.Hold", "Service.Recover"}},
	"worktree/setup.go":                 {"worktree_setup commands, started with the user's credential in a process group of their own", []string{"runSetup"}},
	"worktree/status.go":                {"Lstat of a worktree path the daemon's own index holds", []string{"StatusOf"}},
}

// TestOneWayIn walks the daemon's packages and fails on a raw file or
// process call outside the sanctioned functions: a new reader of a user's
// file must go through daemon/state, or say here why it need not.
func TestOneWayIn(t *testing.T) {
	found := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// state is the one way in; testdata and agenttest are tests'.
			if p == "state" || d.Name() == "testdata" || p == filepath.Join("agent", "agenttest") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := funcName(fn)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if ok && slices.Contains(rawCalls[pkg.Name], sel.Sel.Name) && !slices.Contains(found[p], name) {
					found[p] = append(found[p], name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, funcs := range found {
		s, ok := sanctioned[filepath.ToSlash(file)]
		for _, fn := range funcs {
			if !ok || !slices.Contains(s.funcs, fn) {
				t.Errorf("%s: %s makes a raw file or process call: open a user's path through daemon/state (Project, Files), start a user's process with their credential, or add it to sanctioned with the reason it is safe", file, fn)
			}
		}
	}
	// The list says only what is true: an entry no longer needed goes.
	var stale []string
	for file, s := range sanctioned {
		for _, fn := range s.funcs {
			if !slices.Contains(found[filepath.FromSlash(file)], fn) {
				stale = append(stale, file+": "+fn)
			}
		}
	}
	sort.Strings(stale)
	for _, s := range stale {
		t.Errorf("sanctioned names %s, which makes no raw call any more: remove it", s)
	}
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
