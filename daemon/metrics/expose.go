package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The Prometheus text exposition format (version 0.0.4), written by hand:
// the daemon exports a few counters and histograms, and the client
// library, with its protobuf dependency, would cost every daemon a few
// MiB of memory whether metrics are on or not.

// contentType is the text format's media type.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric family: its samples are written after its HELP and
// TYPE lines.
type family interface {
	write(w *bufio.Writer)
}

// counter is a monotonic count.
type counter struct{ n atomic.Uint64 }

func (c *counter) Inc()          { c.n.Add(1) }
func (c *counter) value() uint64 { return c.n.Load() }

// scalar is a family of one unlabelled counter.
type scalar struct {
	name, help string
	c          counter
}

func (f *scalar) write(w *bufio.Writer) {
	header(w, f.name, f.help, "counter")
	sample(w, f.name, nil, nil, float64(f.c.value()))
}

// counterVec is a family of counters by the values of its labels.
type counterVec struct {
	name, help string
	labels     []string
	mu         sync.Mutex
	by         map[string]*counter // key: the label values joined by \x00
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, by: map[string]*counter{}}
}

// with returns the counter of these label values (as many as labels).
func (v *counterVec) with(values ...string) *counter {
	key := strings.Join(values, "\x00")
	v.mu.Lock()
	defer v.mu.Unlock()
	c := v.by[key]
	if c == nil {
		c = &counter{}
		v.by[key] = c
	}
	return c
}

func (v *counterVec) write(w *bufio.Writer) {
	header(w, v.name, v.help, "counter")
	v.mu.Lock()
	keys := make([]string, 0, len(v.by))
	for k := range v.by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([]uint64, len(keys))
	for i, k := range keys {
		vals[i] = v.by[k].value()
	}
	v.mu.Unlock()
	for i, k := range keys {
		sample(w, v.name, v.labels, strings.Split(k, "\x00"), float64(vals[i]))
	}
}

// histogram counts observations into cumulative buckets.
type histogram struct {
	bounds []float64 // upper bounds, ascending; +Inf is implied
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf's
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe counts v.
func (h *histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound ≥ v
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *histogram) writeSamples(w *bufio.Writer, name string, labels, values []string) {
	h.mu.Lock()
	counts := slices.Clone(h.counts)
	sum, n := h.sum, h.n
	h.mu.Unlock()
	le := append(slices.Clone(labels), "le")
	var cum uint64
	for i, c := range counts {
		cum += c
		bound := math.Inf(1)
		if i < len(h.bounds) {
			bound = h.bounds[i]
		}
		sample(w, name+"_bucket", le, append(slices.Clone(values), formatFloat(bound)), float64(cum))
	}
	sample(w, name+"_sum", labels, values, sum)
	sample(w, name+"_count", labels, values, float64(n))
}

// histogramFamily is a family of one unlabelled histogram.
type histogramFamily struct {
	name, help string
	*histogram
}

func (f *histogramFamily) write(w *bufio.Writer) {
	header(w, f.name, f.help, "histogram")
	f.writeSamples(w, f.name, nil, nil)
}

// histogramVec is a family of histograms by the value of one label.
type histogramVec struct {
	name, help, label string
	bounds            []float64
	mu                sync.Mutex
	by                map[string]*histogram
}

func (v *histogramVec) with(value string) *histogram {
	v.mu.Lock()
	defer v.mu.Unlock()
	h := v.by[value]
	if h == nil {
		h = newHistogram(v.bounds)
		v.by[value] = h
	}
	return h
}

func (v *histogramVec) write(w *bufio.Writer) {
	header(w, v.name, v.help, "histogram")
	v.mu.Lock()
	keys := make([]string, 0, len(v.by))
	for k := range v.by {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	hs := make([]*histogram, len(keys))
	for i, k := range keys {
		hs[i] = v.by[k]
	}
	v.mu.Unlock()
	for i, k := range keys {
		hs[i].writeSamples(w, v.name, []string{v.label}, []string{k})
	}
}

// gauges is a family of gauges read when scraped.
type gauges struct {
	name, help, kind string // kind: "gauge" or "counter"
	read             func() []gaugeSample
}

type gaugeSample struct {
	labels, values []string
	v              float64
}

func (g *gauges) write(w *bufio.Writer) {
	header(w, g.name, g.help, g.kind)
	for _, s := range g.read() {
		sample(w, g.name, s.labels, s.values, s.v)
	}
}

// writeFamilies writes fams in the text format.
func writeFamilies(out io.Writer, fams []family) error {
	w := bufio.NewWriter(out)
	for _, f := range fams {
		f.write(w)
	}
	return w.Flush()
}

func header(w *bufio.Writer, name, help, kind string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, kind)
}

func sample(w *bufio.Writer, name string, labels, values []string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l)
			w.WriteString(`="`)
			w.WriteString(escapeLabel(values[i]))
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
