package starter

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/workspace"
)

// runsOnItsOwn reports whether a tool on the user's machine may run what
// the file says without being asked: editor tasks and settings (run when
// the folder is opened), dev containers, direnv, and commit-hook managers
// (run at the next commit).
func runsOnItsOwn(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	switch first {
	case ".vscode", ".idea", ".devcontainer", ".husky":
		return true
	}
	switch p {
	case ".devcontainer.json", ".envrc", ".pre-commit-config.yaml":
		return true
	}
	return false
}

// holdBackSelfRunning keeps files that tools run on their own as they were
// in input: the task's new or changed ones are not written to the user's
// directory, and w says which and how to get them after a review.
func holdBackSelfRunning(taskID string, input, files []workspace.File, w io.Writer) []workspace.File {
	var held []string
	kept := files[:0:0]
	for _, f := range files {
		if runsOnItsOwn(f.Path) {
			i := slices.IndexFunc(input, func(in workspace.File) bool { return in.Path == f.Path })
			if i < 0 || string(input[i].Data) != string(f.Data) || input[i].FileMode() != f.FileMode() {
				held = append(held, f.Path)
				if i >= 0 {
					kept = append(kept, input[i])
				}
				continue
			}
		}
		kept = append(kept, f)
	}
	if len(held) > 0 {
		fmt.Fprintf(w, "held back %s: tools run such files on their own (when the folder is opened, or at the next commit); "+
			"review them with `autocoder export %s --patch`, then write them with `autocoder export %s DIR`\n",
			termsafe.Line(strings.Join(held, ", ")), taskID, taskID)
	}
	return kept
}
