// Command autocoder is a durable, self-improving autonomous coding agent.
package main

import (
	"os"

	"github.com/autocoder/autocoder/sandbox/forward"
	"github.com/autocoder/autocoder/starter"
)

func main() {
	// The sandbox runs this executable as its egress forwarder, under
	// that name: nothing else of autocoder starts then.
	if forward.Is(os.Args[0]) {
		os.Exit(forward.Main(os.Args[1:]))
	}
	os.Exit(starter.Execute())
}
