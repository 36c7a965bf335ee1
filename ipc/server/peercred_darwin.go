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
	var cred *unix.Xucred
	var pid int
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if serr == nil {
			pid, _ = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return ipc.Caller{}, err
	}
	gid := 0
	if cred.Ngroups > 0 {
		gid = int(cred.Groups[0])
	}
	return ipc.Caller{UID: int(cred.Uid), GID: gid, PID: pid}, nil
}
