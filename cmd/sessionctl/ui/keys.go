package ui

import "charm.land/bubbles/v2/key"

// keyMap holds the dashboard's keys; the help screen and the key line at
// the bottom are made from it.
type keyMap struct {
	move, up, down, pageUp, pageDown, home, end key.Binding
	nextTab, prevTab, live, ended, all          key.Binding
	filter, order, reverse, clear               key.Binding
	inspect, logs, attach, stop, signal         key.Binding
	extend, checkpoint, restore, handoff        key.Binding
	start, help, quit                           key.Binding
}

func newKeyMap() keyMap {
	b := func(keys []string, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return keyMap{
		move:       b([]string{"up", "down"}, "↑↓", "move"),
		up:         b([]string{"up", "ctrl+p"}, "↑", "up"),
		down:       b([]string{"down", "ctrl+n"}, "↓", "down"),
		pageUp:     b([]string{"pgup"}, "pgup", "page up"),
		pageDown:   b([]string{"pgdown"}, "pgdn", "page down"),
		home:       b([]string{"home"}, "home", "first"),
		end:        b([]string{"end"}, "end", "last"),
		nextTab:    b([]string{"tab"}, "tab", "view"),
		prevTab:    b([]string{"shift+tab"}, "⇧tab", "view back"),
		live:       b([]string{"1"}, "1", "live"),
		ended:      b([]string{"2"}, "2", "ended"),
		all:        b([]string{"3"}, "3", "all"),
		filter:     b([]string{"/"}, "/", "filter"),
		order:      b([]string{"o"}, "o", "sort"),
		reverse:    b([]string{"O"}, "O", "reverse"),
		clear:      b([]string{"esc"}, "esc", "no filter"),
		inspect:    b([]string{"enter", "i"}, "⏎", "inspect"),
		logs:       b([]string{"l"}, "l", "logs"),
		attach:     b([]string{"a"}, "a", "attach"),
		stop:       b([]string{"s"}, "s", "stop"),
		signal:     b([]string{"k"}, "k", "signal"),
		extend:     b([]string{"e"}, "e", "extend"),
		checkpoint: b([]string{"c"}, "c", "checkpoint"),
		restore:    b([]string{"r"}, "r", "restore"),
		handoff:    b([]string{"h"}, "h", "handoff"),
		start:      b([]string{"n"}, "n", "new"),
		help:       b([]string{"?"}, "?", "help"),
		quit:       b([]string{"q", "ctrl+c"}, "q", "quit"),
	}
}

// short is the key line at the bottom of the list, most used first.
func (k keyMap) short() []key.Binding {
	return []key.Binding{k.move, k.nextTab, k.filter, k.order, k.inspect, k.logs, k.attach, k.stop, k.signal,
		k.extend, k.checkpoint, k.restore, k.handoff, k.start, k.help, k.quit}
}

// full is the help screen's columns.
func (k keyMap) full() [][]key.Binding {
	return [][]key.Binding{
		{k.up, k.down, k.pageUp, k.pageDown, k.home, k.end},
		{k.nextTab, k.prevTab, k.live, k.ended, k.all, k.filter, k.clear, k.order, k.reverse},
		{k.inspect, k.logs, k.handoff, k.attach, k.checkpoint, k.extend},
		{k.stop, k.signal, k.restore, k.start, k.help, k.quit},
	}
}
