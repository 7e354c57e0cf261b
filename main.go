// Command autocoder is a durable, self-improving autonomous coding agent.
package main

import (
	"os"

	"github.com/autocoder/autocoder/starter"
)

func main() {
	os.Exit(starter.Execute())
}
