// Package mcptest builds the test MCP server, lookupserver, for tests of
// the MCP client.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// LookupServer builds lookupserver into a temporary directory and returns
// the binary's path.
func LookupServer(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "lookupserver")
	cmd := exec.Command("go", "build", "-o", bin, "./lookupserver")
	cmd.Dir = filepath.Dir(file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build lookupserver: %v\n%s", err, out)
	}
	return bin
}

// Calls counts the lookup calls logged in the file.
func Calls(t testing.TB, logPath string) int {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "lookup ")
}
