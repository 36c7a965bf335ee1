package state

import "golang.org/x/sys/unix"

// existsFlags open a path only to see that it is there: O_PATH reads
// nothing and never blocks, whatever the file is.
const existsFlags = unix.O_PATH
