package logkeep

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// request is one message from the daemon.
type request struct {
	Op   string `json:"op"` // hello, add, drain, release, release-all
	Path string `json:"path,omitempty"`
	// Paths are release-all's: the pipes of sessions that ended together.
	Paths []string `json:"paths,omitempty"`
	Max   int64    `json:"max,omitempty"`
	Keep  int      `json:"keep,omitempty"`
}

// reply answers a request; a hello's reply comes in batches (More) of
// paths, each with a duplicate of its pipe's read end.
type reply struct {
	Error string   `json:"error,omitempty"`
	Paths []string `json:"paths,omitempty"`
	More  bool     `json:"more,omitempty"`
}

// maxMessage bounds one message; maxFDs the descriptors one carries
// (the kernel's SCM_MAX_FD is 253).
const (
	maxMessage = 64 << 10
	maxFDs     = 200
)

// send writes one message with descriptors attached (raw, so that no
// file's blocking mode is changed by asking for its descriptor).
func send(c *net.UnixConn, v any, fds ...int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxMessage {
		return fmt.Errorf("log keeper message of %d bytes is over %d", len(b), maxMessage)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// msgBuf is the room one message is received into, reused: 64 KiB made
// and cleared for each message would be most of what the daemon allocates
// while a thousand sessions end at once, a release each.
type msgBuf struct{ b, oob []byte }

var msgBufs = sync.Pool{New: func() any {
	return &msgBuf{b: make([]byte, maxMessage), oob: make([]byte, unix.CmsgSpace(maxFDs*4))}
}}

// receive reads one message into v and returns the descriptors it
// carried (close-on-exec), which the caller owns.
func receive(c *net.UnixConn, v any) ([]int, error) {
	m := msgBufs.Get().(*msgBuf)
	defer msgBufs.Put(m)
	b, oob := m.b, m.oob
	n, oobn, flags, _, err := c.ReadMsgUnix(b, oob)
	if err != nil {
		return nil, err
	}
	files, ferr := filesOf(oob[:oobn])
	if n == 0 && oobn == 0 {
		return nil, net.ErrClosed
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeFDs(files)
		return nil, errors.New("log keeper message truncated")
	}
	if ferr != nil {
		closeFDs(files)
		return nil, ferr
	}
	if err := json.Unmarshal(b[:n], v); err != nil {
		closeFDs(files)
		return nil, fmt.Errorf("log keeper message: %w", err)
	}
	return files, nil
}

func filesOf(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("log keeper message's descriptors: %w", err)
	}
	var files []int
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return files, fmt.Errorf("log keeper message's descriptors: %w", err)
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, fd)
		}
	}
	return files, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// ownUser refuses a peer that is not of this process's user.
func ownUser(c *net.UnixConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("log keeper: uid %d is not its user", cred.Uid)
	}
	return nil
}
