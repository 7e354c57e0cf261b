package starter

import (
	"context"
	"fmt"
	"github.com/autocoder/autocoder/internal/truncate"
	"io"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// usersTests is the protected set of a task, as its checks saw it.
func usersTests(st workflows.Status, input []workspace.File) integrity.Set {
	return integrity.Protect(input, integrity.Options{TestCmd: st.TestCmd, Protect: st.Protect})
}

// keepUsersTests is what the final write puts on disk: the result with the
// user's tests as they were at the start (input) and without configuration
// that would skip or deselect them, unless the task allowed test edits.
// What it keeps back it says on w.
func keepUsersTests(st workflows.Status, input, files []workspace.File, w io.Writer) []workspace.File {
	if st.TestEditsAllowed || st.InputSnapshot == "" {
		return files
	}
	kept, findings := usersTests(st, input).Judge(files)
	for _, fd := range findings {
		fmt.Fprintf(w, "kept your tests as they were: the task %s (allow it with --allow-test-edits; `export --patch` shows it)\n", termsafe.Line(fd.String()))
	}
	return kept
}

// splitTestChanges parts a result into the user's tests (protected files
// and configuration that would change what runs) and the rest, so a patch
// can show the changes to the tests apart.
func splitTestChanges(st workflows.Status, before, after []workspace.File) (tests, rest [2][]workspace.File) {
	set := usersTests(st, before)
	_, findings := set.Judge(after)
	touched := func(p string) bool {
		return set.Contains(p) || slices.ContainsFunc(findings, func(f integrity.Finding) bool { return f.Path == p })
	}
	for i, files := range [2][]workspace.File{before, after} {
		for _, f := range files {
			if touched(f.Path) {
				tests[i] = append(tests[i], f)
			} else {
				rest[i] = append(rest[i], f)
			}
		}
	}
	return tests, rest
}

// testsPatchHeader introduces the changes to the user's tests at the top
// of a patch; git apply skips it.
func testsPatchHeader(diff []byte) string {
	var paths []string
	for _, line := range strings.Split(string(diff), "\n") {
		if p, ok := strings.CutPrefix(line, "diff --git a/"); ok {
			paths = append(paths, strings.SplitN(p, " b/", 2)[0])
		}
	}
	return "# This patch changes the user's tests: " + strings.Join(paths, ", ") + "\n" +
		"# They come first; writing the result to a directory (run, resume, export DIR) keeps them as they were unless test edits were allowed.\n"
}

// printFindings lists an attempt's integrity findings under its line.
func printFindings(w io.Writer, prefix string, findings []integrity.Finding) {
	for _, f := range findings {
		fmt.Fprintf(w, "%s! %s\n", prefix, termsafe.Line(f.String()))
	}
}

// printTestGuard says in status how the task treats the user's tests.
func printTestGuard(w io.Writer, st workflows.Status) {
	switch {
	case st.TestEditsAllowed:
		fmt.Fprintln(w, "tests:     edits allowed: the task may change the user's tests, and its result overwrites them")
	case st.TestEditsApproved != "":
		fmt.Fprintf(w, "tests:     a person accepted an attempt that changed the user's tests: %s\n", termsafe.Line(st.TestEditsApproved))
	case st.TestsByModel:
		fmt.Fprintln(w, "tests:     written by the model: review them, they decide what passed")
	case st.InputSnapshot != "":
		run := ""
		if st.TestCmd != "" {
			run = ", by `" + shownCommand(st.TestCmd) + "`"
		}
		fmt.Fprintf(w, "tests:     the user's tests are the judge: checks run them as they were at the start%s\n", run)
	default:
		fmt.Fprintf(w, "tests:     the user's test command is the judge: %s\n", shownCommand(st.TestCmd))
	}
}

// writePatch writes a unified diff of after against before, the changes
// to the user's tests first, under a header of their own. For a terminal
// the task's control characters are made visible; piped, the patch stays
// exact for git apply.
func writePatch(ctx context.Context, w io.Writer, forTerminal bool, st workflows.Status, before, after []workspace.File) error {
	tests, rest := splitTestChanges(st, before, after)
	testDiff, err := unifiedDiff(ctx, tests[0], tests[1])
	if err != nil {
		return err
	}
	diff, err := unifiedDiff(ctx, rest[0], rest[1])
	if err != nil {
		return err
	}
	if len(testDiff) > 0 {
		diff = append([]byte(testsPatchHeader(testDiff)+string(testDiff)), diff...)
	}
	if forTerminal {
		diff = []byte(termsafe.Text(string(diff)))
	}
	_, err = w.Write(diff)
	return err
}

// announceUsersTests says, when a task starts from a project, which of its
// files are the user's tests and what runs them, or that the model writes
// the tests, or that the task may change the user's.
func announceUsersTests(w io.Writer, in workflows.TaskInput, input []workspace.File) {
	if in.AllowTestEdits {
		fmt.Fprintln(w, "test edits allowed: the task may change your tests, and its result overwrites them")
		return
	}
	paths := usersTests(workflows.Status{TestCmd: in.TestCmd, Protect: in.Protect}, input).Paths()
	switch {
	case in.TestCmd == "":
		fmt.Fprintln(w, "none of the uploaded files look like tests in this language: the model writes the tests that decide success; name yours with --protect GLOB or give --test-cmd")
	case len(paths) == 0:
		fmt.Fprintln(w, "none of the uploaded files look like tests; name yours with --protect GLOB so the task cannot change them")
	default:
		fmt.Fprintf(w, "your tests (checks run them as they were; the task may not change them) are the judge, run by `%s`: %s\n",
			shownCommand(in.TestCmd), termsafe.Line(listLimited(paths, 5)))
	}
}

func listLimited(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// shownCommandBytes bounds a test command as the terminal shows it: a
// language's default can be a whole script.
const shownCommandBytes = 100

// shownCommand is a test command for a person: one line, and a long one
// cut short (status --json has it whole).
func shownCommand(cmd string) string {
	line := termsafe.Line(cmd)
	if len(line) <= shownCommandBytes {
		return line
	}
	return truncate.Head(line, shownCommandBytes) + " …"
}
