// Command sessiond is the sessiond supervisor daemon.
package main

import "os"

func main() { os.Exit(run(os.Args[1:])) }
