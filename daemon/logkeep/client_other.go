//go:build !linux

package logkeep

import (
	"errors"
	"io"
	"os"

	"go.uber.org/zap"
)

// Supported says whether this platform has the keeper: elsewhere, the
// child writes its log itself.
const Supported = false

var errUnsupported = errors.New("the log keeper needs Linux")

// Options say where the keeper listens and how one is started.
type Options struct {
	Socket, Executable, Diag string
	Logger                   *zap.Logger
}

// Client is absent on this platform.
type Client struct{}

// Connect reports that there is no keeper here.
func Connect(Options) (*Client, error) { return nil, errUnsupported }

// Attach is never reached (Connect fails).
func (c *Client) Attach(string, *os.File, int64, int) (*os.File, error) { return nil, errUnsupported }

// Adopt reports that no pipe is held.
func (c *Client) Adopt(string, int64, int) bool { return false }

// Holds reports that no pipe is held.
func (c *Client) Holds(string) bool { return false }

// Drain does nothing.
func (c *Client) Drain(string) {}

// Release does nothing.
func (c *Client) Release(string) {}

// Close does nothing.
func (c *Client) Close() {}

// Serve refuses: there is no keeper here.
func Serve(string, io.Writer, *zap.Logger) error { return errUnsupported }
