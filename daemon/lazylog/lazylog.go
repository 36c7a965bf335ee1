// Package lazylog gives a logger its context fields without encoding them
// up front: zap's With encodes them into a buffer of its own (a KiB each),
// a cost every session and every project watch would hold for a log line
// they seldom write. Here the fields are kept as they are and added to
// each entry when it is written.
package lazylog

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// With returns l with fields added to every entry it writes.
func With(l *zap.Logger, fields ...zap.Field) *zap.Logger {
	if len(fields) == 0 {
		return l
	}
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return &core{Core: c, fields: fields}
	}))
}

// core adds its fields to the entries it writes.
type core struct {
	zapcore.Core
	fields []zap.Field
}

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{Core: c.Core, fields: append(c.fields[:len(c.fields):len(c.fields)], fields...)}
}

func (c *core) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *core) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	all := make([]zapcore.Field, 0, len(c.fields)+len(fields))
	return c.Core.Write(ent, append(append(all, c.fields...), fields...))
}
