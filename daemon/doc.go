// Package daemon is sessiond's composition root: it builds the services,
// hands each the few others it uses, wires them to the API server, recovers
// the sessions of an earlier daemon at start, and runs the ordered
// shutdown. Nothing else lives here. What is where:
//
//   - session: one session as an actor — the one goroutine that owns its
//     record, child, watch, schedule, sidecars and timers;
//   - registry: the only index of sessions by id, with the restart chains
//     their records spell out;
//   - sessions: the sessions and terminals APIs, the launch of a session,
//     recovery, history trimming, the restart policy's Launcher;
//   - restart: the restart policy's timers;
//   - spec: a start's spec, resolved from defaults, sessiond.toml and flags;
//   - access: which user a caller's sessions run as, which directories it
//     may use;
//   - logs: the session logs' watcher and the logs API (one follow loop);
//   - events: the event bus and the events API;
//   - projects: the projects API (state, checkpoints, restore);
//   - notify: the notifier and the notifications API;
//   - worktree: git worktrees of parallel sessions and the worktrees API;
//   - memory: handing memory back after bursts of starts and ends;
//   - schedule: the cron of checkpoint schedules;
//   - state, checkpoint, watch, proc, term, agent: files, git, fsnotify,
//     processes, terminals and agents, as the services use them.
package daemon
