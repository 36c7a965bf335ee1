// Package notify tells a person when a session needs one: it matches the
// daemon's events (warned, agent_waiting, ended, failed, ...) against the
// [[notify]] rules of the daemon config and of the session's project, and
// sends each match to the rule's sink: a command run as the session's user,
// a webhook (JSON, Slack or ntfy), or a desktop notification.
//
// Notifications never get in the way of the session. Publish only matches
// and queues, and returns at once. Every rule has a bounded queue and one
// worker of its own, so a hanging command or a dead webhook holds up only
// later notifications of the same rule, which are then dropped once its
// queue is full; a rule is the unit that has one sink and one set of
// timeouts and retries, so a per-rule queue keeps that rule's
// notifications in order and cannot be starved by another's. A total cap
// across rules bounds memory when many projects' rules are busy at once.
// What is dropped is counted (Stats) and logged at most once per interval.
// A worker stops after a minute without work, so the rules of projects no
// longer in use cost nothing.
//
// Repeats are left out twice over. An event that carries a Spell (the time
// the agent started waiting, say) is sent once per spell, however often the
// agent's hooks report the same state. A rule's min_interval then holds back
// a rule's further notifications for the same session until it has passed:
// per session rather than per rule, so that one chatty session cannot hide
// another session's failure.
//
// Commands (and the helpers behind desktop notifications) run in their own
// process group through daemon/proc's Start and Wait, so the daemon's
// reaper leaves their exit status to os/exec; at their timeout the whole
// group is killed. Webhook secrets are read at send time from the file or
// environment variable the rule names and are never logged; webhook URLs are
// logged without their path, which often holds a token.
//
// The payload every sink is built from is Payload, version PayloadVersion,
// documented field by field in docs/notifications.md.
package notify
