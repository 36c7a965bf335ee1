package main

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sessiond/sessiond/daemon/logkeep"
)

// isLogKeeperMode reports whether the daemon started this process as its
// log keeper: `sessiond logkeeper --socket PATH`, dispatched before the
// command tree is built, as the holder is.
func isLogKeeperMode(args []string) bool {
	return len(args) == 3 && args[0] == "logkeeper" && args[1] == "--socket"
}

// runLogKeeper runs the log keeper and returns its exit code; its log is
// its stderr, which the daemon points at state_dir/logkeeper.log.
func runLogKeeper(sock string) int {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), zap.InfoLevel)).Named("logkeeper")
	if err := logkeep.Serve(sock, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "sessiond logkeeper:", err)
		return 1
	}
	return 0
}
