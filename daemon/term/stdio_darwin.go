package term

import "golang.org/x/sys/unix"

// dupOnto makes newfd refer to what oldfd refers to.
func dupOnto(oldfd, newfd int) error { return unix.Dup2(oldfd, newfd) }
