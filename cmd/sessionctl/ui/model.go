package ui

import (
	"os/user"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sessiond/sessiond/ipc"
)

// Options say how the dashboard reaches the daemon.
type Options struct {
	// Client talks to the daemon.
	Client *ipc.Client
	// Socket is the daemon's socket, which sessionctl attach is given.
	Socket string
	// SocketGiven says the socket was named with --socket: the sessionctl
	// commands shown then name it too.
	SocketGiven bool
	// Host is another host's daemon (ssh://...), which the commands the
	// dashboard runs and shows name.
	Host string
	// HostStates, for a dashboard of several hosts, say how each stands;
	// each session's Host names its context.
	HostStates func() []HostState
	// Executable is the sessionctl binary that runs sessionctl attach.
	Executable string
	// NoColor leaves colour out (NO_COLOR, --no-color).
	NoColor bool
}

// mode is what the keyboard drives at the moment.
type mode int

const (
	modeList    mode = iota // the list and its detail pane
	modeFilter              // typing the filter
	modePrompt              // typing an action's argument
	modeConfirm             // y or n to an action
	modePicker              // choosing a checkpoint to restore
	modePager               // a full screen of text: logs, inspect, handoff, help
)

// model is the dashboard's state. It is a value: Update returns the next
// one, and View renders one without side effects, so that tests drive it
// with messages and read its views.
type model struct {
	opt  Options
	conn *conn // nil when the model is driven by tests: no request is made
	st   styles
	keys keyMap
	loc  *time.Location

	width, height int
	now           time.Time

	// The daemon connection.
	online   bool
	tried    bool   // a first connection was attempted
	offline  string // why the daemon is not reachable
	retries  int
	events   *ipc.EventWatcher
	sessions map[string]*ipc.Session
	// fetching holds the sessions whose record is being fetched; true
	// when another event came meanwhile and it must be fetched again.
	fetching map[string]bool
	users    map[int]string

	// The list.
	tab      tab
	order    order
	desc     bool
	filter   string
	selected string
	cursor   int // the selected row's index, to stay near when it goes
	top      int // the first row shown
	// pendingSelect is a session just started here, selected when its
	// record arrives.
	pendingSelect string

	// The detail pane.
	tail        tailView
	handoffs    map[string]handoffResult
	checkpoints map[string]checkpointsResult

	// Modal state.
	mode    mode
	input   field
	prompt  prompt
	confirm confirm
	picker  picker
	pager   pager

	status status
}

func newModel(opt Options) model {
	return model{
		opt:         opt,
		st:          newStyles(!opt.NoColor),
		keys:        newKeyMap(),
		loc:         time.Local,
		now:         time.Now(),
		sessions:    map[string]*ipc.Session{},
		fetching:    map[string]bool{},
		users:       map[int]string{},
		handoffs:    map[string]handoffResult{},
		checkpoints: map[string]checkpointsResult{},
	}
}

// tickMsg moves the clocks.
type tickMsg time.Time

func tick() tea.Cmd {
	return tea.Every(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Init connects to the daemon and starts the clock.
func (m model) Init() tea.Cmd {
	if m.conn == nil {
		return nil
	}
	return tea.Batch(m.conn.connect(), tick())
}

// Update applies one message.
func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.pager.resize(m.width, m.height)
	case tickMsg:
		m.now = time.Time(msg)
		return m, tick()
	case tea.InterruptMsg:
		return m.quit()
	case tea.KeyPressMsg:
		m, cmd = m.key(msg)
	case tea.PasteMsg:
		if m.mode == modeFilter || m.mode == modePrompt {
			m.input.update(msg)
			if m.mode == modeFilter {
				m.filter = m.input.text()
			}
		}
	case connectedMsg, offlineMsg, reconnectMsg, eventMsg, streamEndedMsg, listedMsg, recordMsg:
		m, cmd = m.feed(msg)
	case logMsg:
		m, cmd = m.logs(msg)
	case handoffMsg:
		m.handoffs[msg.id] = handoffResult{h: msg.h, err: msg.err}
	case checkpointsMsg:
		m.checkpoints[msg.dir] = checkpointsResult{list: msg.list, err: msg.err}
		if m.mode == modePicker && m.picker.dir == msg.dir {
			m.picker.loaded(msg.list, msg.err)
		}
	case actionMsg, specMsg, attachedMsg, handoffPageMsg:
		m, cmd = m.action(msg)
	}
	settle := m.settle()
	return m, tea.Batch(cmd, settle)
}

// quit ends the dashboard and its streams.
func (m model) quit() (model, tea.Cmd) {
	m.tail.f.stop()
	m.pager.f.stop()
	if m.events != nil {
		m.events.Close()
	}
	return m, tea.Quit
}

// learnUser looks up the name of a uid for the USER column, once per uid.
func (m *model) learnUser(uid int) {
	if _, ok := m.users[uid]; ok {
		return
	}
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	m.users[uid] = name
}
