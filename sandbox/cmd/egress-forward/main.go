// Command egress-forward is the egress forwarder alone (package
// sandbox/forward), small and static when built with CGO_ENABLED=0: for
// sandbox.forwarder, where the worker's own executable cannot serve.
package main

import (
	"os"

	"github.com/autocoder/autocoder/sandbox/forward"
)

func main() { os.Exit(forward.Main(os.Args[1:])) }
