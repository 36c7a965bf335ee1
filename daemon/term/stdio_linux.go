package term

import "golang.org/x/sys/unix"

// dupOnto makes newfd refer to what oldfd refers to.
func dupOnto(oldfd, newfd int) error { return unix.Dup3(oldfd, newfd, 0) }
