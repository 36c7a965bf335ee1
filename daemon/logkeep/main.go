package logkeep

import (
	"fmt"
	"os"
	"runtime/debug"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// KeeperName is the keeper's executable of its own
// (cmd/sessiond/libexec/sessiond-logkeeper): the keeper without the rest of
// sessiond linked in, which keeps less of itself in memory while it
// carries the logs (bench/README.md). The daemon runs it where
// proc.Libexec finds it, and `sessiond logkeeper` otherwise.
const KeeperName = "sessiond-logkeeper"

// memoryLimit is the keeper's soft memory limit.
const memoryLimit = 256 << 20

// Main runs a keeper on the socket sock, as `sessiond logkeeper --socket
// PATH` and sessiond-logkeeper do, and returns its exit code. Its own log,
// JSON lines, goes to stderr, which the daemon points at
// state_dir/logkeeper.log.
func Main(name, sock string) int {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), zap.InfoLevel)).Named("logkeeper")
	// While the keeper rests its collector is off (see rest): this bounds
	// its heap then, far above what it holds (a buffer per stream busy at
	// the time, 256 KiB each).
	debug.SetMemoryLimit(memoryLimit)
	if err := Serve(sock, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	return 0
}
