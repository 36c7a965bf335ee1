package main

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// table aligns columns itself (rather than with text/tabwriter) so that a
// coloured cell is padded by its visible width.
type table struct {
	color bool
	head  []string
	rows  [][]cell
}

// cell is one table cell; color is an ANSI SGR code ("32"), or "".
type cell struct {
	text  string
	color string
}

func newTable(color bool) *table { return &table{color: color} }

func (t *table) header(cols ...string) { t.head = cols }

func (t *table) row(cells ...cell) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.head))
	grow := func(i int, s string) {
		for len(widths) <= i {
			widths = append(widths, 0)
		}
		widths[i] = max(widths[i], utf8.RuneCountInString(s))
	}
	for i, h := range t.head {
		grow(i, h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			grow(i, c.text)
		}
	}
	var b strings.Builder
	lineWidth := len(widths)
	for _, w := range widths {
		lineWidth += w + 2
	}
	b.Grow(lineWidth * (len(t.rows) + 1))
	line := func(cells []cell) {
		for i, c := range cells {
			if t.color && c.color != "" {
				// Colour the text only, not the padding after it.
				b.WriteString("\x1b[" + c.color + "m")
				b.WriteString(c.text)
				b.WriteString("\x1b[0m")
			} else {
				b.WriteString(c.text)
			}
			if i < len(cells)-1 {
				for n := widths[i] - utf8.RuneCountInString(c.text) + 2; n > 0; n-- {
					b.WriteByte(' ')
				}
			}
		}
		b.WriteByte('\n')
	}
	if len(t.head) > 0 {
		head := make([]cell, len(t.head))
		for i, h := range t.head {
			head[i] = cell{text: h}
		}
		line(head)
	}
	for _, r := range t.rows {
		line(r)
	}
	_, _ = io.WriteString(w, b.String())
}

// useColor reports whether output gets colour: only on a terminal, and
// neither --no-color nor NO_COLOR says otherwise.
func (a *app) useColor() bool {
	if a.noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := a.out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stateColor is the colour of a session's state: green while it runs,
// yellow when warned or stopping, red when it failed, dim once ended well.
func stateColor(state, reason string) string {
	switch state {
	case "running":
		return "32"
	case "warned", "stopping", "starting", "queued":
		return "33"
	case "failed":
		return "31"
	case "ended":
		switch reason {
		case "complete", "interrupted":
			return "2"
		}
		return "31"
	}
	return ""
}
