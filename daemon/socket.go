package daemon

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"go.uber.org/zap"

	"github.com/sessiond/sessiond/ipc"
	"github.com/sessiond/sessiond/ipc/server"
)

// shareSocket gives the socket to the first of allowed_groups, so that
// their members can connect (the peer check then lets them in).
func (d *Daemon) shareSocket() error {
	if len(d.cfg.AllowedGroups) == 0 {
		return nil
	}
	grp, err := user.LookupGroup(d.cfg.AllowedGroups[0])
	if err != nil {
		return fmt.Errorf("allowed_groups: %w", err)
	}
	gid, _ := strconv.Atoi(grp.Gid)
	if err := os.Chown(d.cfg.Socket, -1, gid); err != nil {
		return fmt.Errorf("give the socket to group %s: %w", grp.Name, err)
	}
	if fi, err := os.Stat(filepath.Dir(d.cfg.Socket)); err == nil && fi.Mode().Perm()&0o011 == 0 {
		d.log.Warn("allowed_groups members cannot reach the socket: its directory is closed to them (chgrp it to the group and chmod 0750, or put the socket elsewhere)",
			zap.String("dir", filepath.Dir(d.cfg.Socket)), zap.String("mode", fmt.Sprintf("%04o", fi.Mode().Perm())))
	}
	return nil
}

// accessFunc allows the daemon's own uid, root, and members of the
// configured groups.
func (d *Daemon) accessFunc() (server.AccessFunc, error) {
	self := os.Geteuid()
	gids := map[int]bool{}
	for _, g := range d.cfg.AllowedGroups {
		grp, err := user.LookupGroup(g)
		if err != nil {
			return nil, fmt.Errorf("allowed_groups: %w", err)
		}
		n, _ := strconv.Atoi(grp.Gid)
		gids[n] = true
	}
	return func(c ipc.Caller) bool {
		if c.UID == self || c.UID == 0 {
			return true
		}
		if len(gids) == 0 {
			return false
		}
		if gids[c.GID] {
			return true
		}
		u, err := user.LookupId(strconv.Itoa(c.UID))
		if err != nil {
			return false
		}
		list, _ := u.GroupIds()
		for _, g := range list {
			if n, _ := strconv.Atoi(g); gids[n] {
				return true
			}
		}
		return false
	}, nil
}
