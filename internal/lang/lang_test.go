package lang

import (
	"os/exec"
	"testing"
)

// TestCommandLineRunsTheCommand: the one-line form of a default test
// command, run by sh -c as a task's test command is, does what the argv
// does, whatever its words hold.
func TestCommandLineRunsTheCommand(t *testing.T) {
	for _, argv := range [][]string{
		{"printf", "%s|", "plain", "two words", "it's", `$HOME`, "a;b", "", "*", `back\slash`, "new\nline"},
		{"sh", "-c", `f() { printf '%s|' "$@"; }; f "$1" x`, "sh", "one 'q' two"},
	} {
		want, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatal(err)
		}
		line := Tests{Command: argv}.CommandLine()
		got, err := exec.Command("/bin/sh", "-c", line).Output()
		if err != nil || string(got) != string(want) {
			t.Errorf("sh -c %s: %q, %v; want %q", line, got, err, want)
		}
	}
}
