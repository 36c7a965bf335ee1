package ui

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
)

// field is a one-line text entry (the filter, a duration, a signal name).
// The dashboard's answers are a few words long, so the cursor stays at the
// end: typing appends, backspace and ctrl+w delete, ctrl+u clears. It
// stands in for the bubbles text input, whose clipboard dependency would
// search $PATH at every sessionctl start.
type field struct {
	value []rune
	limit int
}

// set replaces the field's text.
func (f *field) set(s string) { f.value = []rune(s) }

// text returns the field's text.
func (f *field) text() string { return string(f.value) }

// update applies a key press or a paste; it reports whether the field
// used the message.
func (f *field) update(msg tea.Msg) bool {
	switch msg := msg.(type) {
	case tea.PasteMsg:
		f.insert(msg.Content)
		return true
	case tea.KeyPressMsg:
		switch msg.String() {
		case "backspace", "ctrl+h":
			if len(f.value) > 0 {
				f.value = f.value[:len(f.value)-1]
			}
			return true
		case "ctrl+u":
			f.value = f.value[:0]
			return true
		case "ctrl+w", "alt+backspace":
			v := strings.TrimRightFunc(string(f.value), unicode.IsSpace)
			i := strings.LastIndexFunc(v, unicode.IsSpace)
			f.value = []rune(v[:i+1])
			return true
		}
		if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
			f.insert(msg.Text)
			return true
		}
	}
	return false
}

func (f *field) insert(s string) {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			continue
		}
		if f.limit > 0 && len(f.value) >= f.limit {
			return
		}
		f.value = append(f.value, r)
	}
}

// view renders the field with its cursor.
func (f *field) view(st *styles) string {
	return line(string(f.value)) + st.reverse.Render(" ")
}
