package server

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/ipc"
)

func peerCredentials(c *net.UnixConn) (ipc.Caller, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return ipc.Caller{}, err
	}
	var cred *unix.Ucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return ipc.Caller{}, err
	}
	return ipc.Caller{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid)}, nil
}
