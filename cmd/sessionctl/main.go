// Command sessionctl controls sessiond over its Unix socket.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
