package policy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Python sources are checked inside the sandbox, by the interpreter the code
// targets: untrusted Python is never parsed on the host.

//go:embed pycheck.py
var pycheckSource []byte

// PyCheckPath is where PythonCheck places the checker in the sandbox
// workdir. The caller must make sure no workspace file takes this path.
const PyCheckPath = ".autocoder/pycheck.py"

// ErrPyCheckOutput reports checker output that is malformed or incomplete
// (the checker crashed, was killed, or its output was truncated); the check
// did not happen and must not be read as a pass.
var ErrPyCheckOutput = errors.New("bad python check output")

// PythonCheck returns the checker script to add to the sandbox files and the
// argv that runs it in the workdir. The interpreter runs isolated (-I) so
// that no workspace module can shadow the ones the checker imports, and
// writes no bytecode (-B).
//
// With a command in then, a check that finds nothing removes the checker
// and replaces itself with that command, in the same sandbox, once its
// report is written: no workspace code runs before the report is complete,
// and none runs at all when there is a finding. SplitPythonFindings tells
// the report from the command's output.
func PythonCheck(rules Rules, then ...string) (script workspace.File, cmd []string) {
	config, err := json.Marshal(struct {
		Deny []string `json:"deny"`
	}{rules.Denied()})
	if err != nil {
		panic(fmt.Sprintf("policy: encode python check config: %v", err)) // a []string always encodes
	}
	script = workspace.File{Path: PyCheckPath, Mode: 0o644, Data: bytes.Clone(pycheckSource)}
	cmd = []string{"python3", "-I", "-B", PyCheckPath, "--config", string(config)}
	if len(then) > 0 {
		cmd = append(append(cmd, "--then"), then...)
	}
	return script, cmd
}

// pyLine is one line of checker output: a finding or the final summary.
type pyLine struct {
	Finding
	Done     bool `json:"done"`
	Files    int  `json:"files"`
	Findings int  `json:"findings"`
	Dropped  int  `json:"dropped"`
}

// ParsePythonFindings decodes the checker's stdout. Output without the
// final summary line, or whose finding count disagrees with it, or with
// more after it, is an ErrPyCheckOutput error.
func ParsePythonFindings(stdout string) ([]Finding, error) {
	out, rest, err := SplitPythonFindings(stdout)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(rest) != "" {
		return nil, fmt.Errorf("parse python findings: %w: output follows the summary", ErrPyCheckOutput)
	}
	return out, nil
}

// SplitPythonFindings decodes the checker's report at the start of stdout
// and returns what follows its summary line: the output of the command the
// check ran next (PythonCheck's then). A report without the summary line,
// or whose finding count disagrees with it, is an ErrPyCheckOutput error.
func SplitPythonFindings(stdout string) (findings []Finding, rest string, err error) {
	var out []Finding
	for i, s := 1, stdout; s != ""; i++ {
		line, next, _ := strings.Cut(s, "\n")
		s = next
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var l pyLine
		if err := dec.Decode(&l); err != nil {
			return nil, "", fmt.Errorf("parse python findings: %w: line %d: %w", ErrPyCheckOutput, i, err)
		}
		if l.Done {
			if l.Findings != len(out) {
				return nil, "", fmt.Errorf("parse python findings: %w: summary counts %d findings, read %d", ErrPyCheckOutput, l.Findings, len(out))
			}
			sortFindings(out)
			return out, s, nil
		}
		if l.File == "" || l.Rule == "" {
			return nil, "", fmt.Errorf("parse python findings: %w: line %d has no file or rule", ErrPyCheckOutput, i)
		}
		out = append(out, l.Finding)
	}
	return nil, "", fmt.Errorf("parse python findings: %w: no summary line", ErrPyCheckOutput)
}
