package lazylog

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestFieldsOnEveryEntry(t *testing.T) {
	obs, logs := observer.New(zapcore.InfoLevel)
	base := zap.New(obs)
	l := With(base, zap.String("session", "s1"))
	w := With(l, zap.String("project", "/p")).With(zap.Int("n", 2))
	l.Info("one", zap.Int("pid", 7))
	w.Warn("two")
	l.Debug("below the level")
	base.Info("three")

	got := logs.AllUntimed()
	if len(got) != 3 {
		t.Fatalf("%d entries, want 3: %v", len(got), got)
	}
	want := []map[string]any{
		{"session": "s1", "pid": int64(7)},
		{"session": "s1", "project": "/p", "n": int64(2)},
		{},
	}
	for i, e := range got {
		ctx := e.ContextMap()
		if len(ctx) != len(want[i]) {
			t.Errorf("entry %d %q: fields %v, want %v", i, e.Message, ctx, want[i])
			continue
		}
		for k, v := range want[i] {
			if ctx[k] != v {
				t.Errorf("entry %d %q: %s = %v, want %v", i, e.Message, k, ctx[k], v)
			}
		}
	}
}

func TestNoFieldsIsTheSameLogger(t *testing.T) {
	l := zap.NewNop()
	if With(l) != l {
		t.Error("With without fields made a new logger")
	}
}
