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

// PyCheckPath and PyConfigPath are where PythonCheck places the checker
// and its configuration in the sandbox workdir; workspace files at these
// paths are left out, so they cannot stand in for either.
const (
	PyCheckPath  = ".autocoder/pycheck.py"
	PyConfigPath = ".autocoder/pycheck.json"
)

// ErrPyCheckOutput reports checker output that is malformed or incomplete
// (the checker crashed, was killed, or its output was truncated); the check
// did not happen and must not be read as a pass.
var ErrPyCheckOutput = errors.New("bad python check output")

// PyCheck is one run of the Python checker.
type PyCheck struct {
	Rules   Rules
	Changes Changes
	// Warn lets Then run after findings, unless one is a syntax error: the
	// findings are for a person to review, not a reason to stop.
	Warn bool
	// Then is the command the checker hands over to (see PythonCheck).
	Then []string
}

// PythonCheck returns the sandbox's files (the workspace's, the checker
// and its configuration) and the argv that runs the checker in the
// workdir. The interpreter runs isolated (-I) so that no workspace module
// can shadow the ones the checker imports, and writes no bytecode (-B).
//
// With a command in c.Then, a check that finds nothing removes the checker
// and its configuration and replaces itself with that command, in the same
// sandbox, once its report is written: no workspace code runs before the
// report is complete, and none runs at all when a finding stops it.
// SplitPythonFindings tells the report from the command's output.
func PythonCheck(c PyCheck, workspaceFiles []workspace.File) (files []workspace.File, cmd []string) {
	config := pyConfig{Deny: c.Rules.Denied(), Warn: c.Warn, Judge: map[string][][2]int{}, Tests: []string{}}
	for _, f := range workspaceFiles {
		if f.Path == PyCheckPath || f.Path == PyConfigPath {
			continue
		}
		files = append(files, f)
		if !strings.HasSuffix(f.Path, ".py") || !c.Changes.Judges(f.Path) {
			continue
		}
		var spans [][2]int
		if s := c.Changes.spans(f.Path); s != nil {
			spans = [][2]int{}
			for _, sp := range s {
				spans = append(spans, [2]int{sp.From, sp.To})
			}
		}
		config.Judge[f.Path] = spans
		if isTest(f.Path) {
			config.Tests = append(config.Tests, f.Path)
		}
	}
	data, err := json.Marshal(config)
	if err != nil {
		panic(fmt.Sprintf("policy: encode python check config: %v", err)) // strings and ints always encode
	}
	files = append(files,
		workspace.File{Path: PyCheckPath, Mode: 0o644, Data: bytes.Clone(pycheckSource)},
		workspace.File{Path: PyConfigPath, Mode: 0o644, Data: data})
	cmd = []string{"python3", "-I", "-B", PyCheckPath, "--config-file", PyConfigPath}
	if len(c.Then) > 0 {
		cmd = append(append(cmd, "--then"), c.Then...)
	}
	return files, cmd
}

// pyConfig is the checker's configuration (see pycheck.py): a file, since
// the spans of a large change would not fit in one argument.
type pyConfig struct {
	Deny  []string            `json:"deny"`
	Warn  bool                `json:"warn"`
	Judge map[string][][2]int `json:"judge"`
	Tests []string            `json:"tests"`
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
