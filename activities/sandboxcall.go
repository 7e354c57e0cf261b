package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/bytesize"
	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/tools"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// sandboxCallMemo is what a sandbox call produced, kept before its result
// is appended: a retry after a crash appends it, or finds it appended, and
// never runs the call again.
type sandboxCallMemo struct {
	Output  SandboxCallOutput `json:"output"`
	Tool    string            `json:"tool"`
	Text    string            `json:"text"`
	IsError bool              `json:"isError,omitempty"`
}

// SandboxCall runs one run, run_tests or install call of the model's last
// turn in the sandbox and appends its result at Position. run executes the
// command over the snapshot with the network off and keeps the files it
// changes as a new snapshot; run_tests runs the task's tests, or the named
// ones, as the check judges them (the user's tests as they were at the
// start) and keeps nothing; install adds packages (installCall). The outcome is memoized before the append, so a retry
// never runs the call twice.
func (a *Activities) SandboxCall(ctx context.Context, in SandboxCallInput) (SandboxCallOutput, error) {
	msgs, err := a.conversationTo(ctx, in.Transcript, in.Position)
	if err != nil {
		return SandboxCallOutput{}, err
	}
	key := memoKey("sandbox-call", in.Transcript, strconv.Itoa(in.Position), in.CallID)
	m, found, err := readMemo[sandboxCallMemo](ctx, a.Store, key)
	if err != nil {
		return SandboxCallOutput{}, err
	}
	if !found {
		if in.Position < len(msgs) {
			return SandboxCallOutput{}, badInput("transcript %s: position %d already holds a message, and no outcome of call %s was kept", in.Transcript, in.Position, in.CallID)
		}
		calls, err := pickCalls(RunToolsInput{Transcript: in.Transcript, Position: in.Position, CallIDs: []string{in.CallID}}, msgs)
		if err != nil {
			return SandboxCallOutput{}, err
		}
		if m, err = a.sandboxCall(ctx, in, calls[0]); err != nil {
			return SandboxCallOutput{}, err
		}
		m.Tool = calls[0].Name
		raw, err := json.Marshal(m)
		if err != nil {
			return SandboxCallOutput{}, fmt.Errorf("encode memo: %w", err)
		}
		// Without the memo a retry would run the call again: that is
		// worse than failing now.
		if err := a.putMemo(ctx, key, raw); err != nil {
			return SandboxCallOutput{}, fmt.Errorf("store the call's outcome: %w", err)
		}
	} else {
		activity.GetLogger(ctx).Info("sandbox call reused from an earlier try", "transcript", in.Transcript, "position", in.Position, "call", in.CallID)
	}
	msg := llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: in.CallID, Name: m.Tool, Content: m.Text, IsError: m.IsError}}
	if err := a.appendMessages(ctx, in.Transcript, in.Position, msg); err != nil {
		return SandboxCallOutput{}, err
	}
	return m.Output, nil
}

// sandboxCall runs the call and describes its outcome for the model.
func (a *Activities) sandboxCall(ctx context.Context, in SandboxCallInput, c llm.ToolCall) (sandboxCallMemo, error) {
	out := SandboxCallOutput{Snapshot: in.Snapshot, Length: in.Position + 1}
	refuse := func(format string, args ...any) sandboxCallMemo {
		out.Headline = "refused: bad arguments"
		return sandboxCallMemo{Output: out, Text: fmt.Sprintf(format, args...), IsError: true}
	}
	if c.Problem != "" {
		return refuse("%s", c.Problem), nil
	}
	switch c.Name {
	case tools.NameRun:
		var args tools.RunArgs
		if err := tools.DecodeArgs(json.RawMessage(c.Arguments), &args); err != nil {
			return refuse("bad arguments for run: %v", err), nil
		}
		if strings.TrimSpace(args.Command) == "" || strings.ContainsRune(args.Command, 0) {
			return refuse("run: the command is empty or holds a NUL byte"), nil
		}
		return a.runCommand(ctx, in, out, args)
	case tools.NameRunTests:
		var args tools.RunTestsArgs
		if err := tools.DecodeArgs(json.RawMessage(c.Arguments), &args); err != nil {
			return refuse("bad arguments for run_tests: %v", err), nil
		}
		var cmd []string
		if len(args.Tests) > 0 {
			l, err := language(in.Language)
			if err != nil {
				return sandboxCallMemo{}, err
			}
			if cmd, err = testsCommand(l, args.Tests); err != nil {
				return refuse("run_tests: %v", err), nil
			}
		}
		return a.runTestCall(ctx, in, out, cmd)
	case tools.NameInstall:
		var args tools.InstallArgs
		if err := tools.DecodeArgs(json.RawMessage(c.Arguments), &args); err != nil {
			return refuse("bad arguments for install: %v", err), nil
		}
		return a.installCall(ctx, in, out, args)
	default:
		return sandboxCallMemo{}, badInput("call %s is to %q, not a sandbox tool", c.ID, c.Name)
	}
}

// callDeps installs the dependencies a run or run_tests call's files
// declare (installDeps); a failed install is the call's answer.
func (a *Activities) callDeps(ctx context.Context, in SandboxCallInput, out SandboxCallOutput, files []workspace.File) (depsInstall, *sandboxCallMemo, error) {
	l, err := language(in.Language)
	if err != nil {
		return depsInstall{}, &sandboxCallMemo{}, err
	}
	deps, err := a.installDeps(ctx, l, files)
	if err != nil {
		return depsInstall{}, &sandboxCallMemo{}, err
	}
	if f := deps.failed; f != nil {
		out.ExitCode, out.Headline = f.ExitCode, f.Headline()
		return deps, &sandboxCallMemo{Output: out, Text: f.Headline() + "\n" + f.Output + "\n"}, nil
	}
	return deps, nil, nil
}

// runCommand runs a run call and keeps the files it changed.
func (a *Activities) runCommand(ctx context.Context, in SandboxCallInput, out SandboxCallOutput, args tools.RunArgs) (sandboxCallMemo, error) {
	files, err := a.cachedFiles(ctx, in.Snapshot)
	if err != nil {
		return sandboxCallMemo{}, err
	}
	deps, failed, err := a.callDeps(ctx, in, out, files)
	if err != nil || failed != nil {
		return *failed, err
	}
	lim := a.limits()
	if t := time.Duration(args.TimeoutSeconds) * time.Second; t > 0 && t < lim.Timeout {
		lim.Timeout = t
	}
	res, err := a.runSandbox(ctx, in.Snapshot, deps.spec(sandbox.Spec{Profile: in.Language, Files: files, Cmd: []string{"sh", "-c", args.Command}, Limits: lim, Collect: true}))
	if err != nil {
		return sandboxCallMemo{}, err
	}
	var text strings.Builder
	text.WriteString(runStatus(res, lim))
	text.WriteString(output(res, outputBytes(in)))
	if err := a.takeRun(ctx, in.Snapshot, files, res, nil, &out, &text); err != nil {
		return sandboxCallMemo{}, err
	}
	out.ExitCode, out.TimedOut = res.ExitCode, res.TimedOut
	out.Headline = headline(res, len(out.Changed))
	return sandboxCallMemo{Output: out, Text: text.String()}, nil
}

// takeRun makes what a collecting run did to files (the snapshot's) the
// call's workspace, only to the paths keep allows when it is set, and
// tells the model what changed; a run that was killed, or left what the
// workspace cannot hold, changes nothing.
func (a *Activities) takeRun(ctx context.Context, snapshot string, files []workspace.File, res sandbox.Result, keep func(string) bool, out *SandboxCallOutput, text *strings.Builder) error {
	notKept := ""
	switch {
	case res.TimedOut || res.OOMKilled:
		notKept = "the command was killed"
	case res.FilesErr != nil:
		notKept = res.FilesErr.Error()
	default:
		next, d := applyRun(files, res.Files, keep)
		if d.refused != "" {
			notKept = d.refused
			break
		}
		if len(d.changed) > 0 {
			id, err := a.putChanged(ctx, snapshot, files, next)
			if err != nil {
				return fmt.Errorf("store snapshot: %w", err)
			}
			out.Snapshot, out.Changed = id, d.changed
		}
		text.WriteString(d.describe())
		if len(res.Unwritable) > 0 {
			quoted := make([]string, len(res.Unwritable))
			for i, p := range res.Unwritable {
				quoted[i] = strconv.Quote(truncate.Head(p, 200))
			}
			fmt.Fprintf(text, "not kept, for their names (a control character or escape sequence, not UTF-8, or too long): %s; use names of printable characters\n", joinLimited(quoted, 10))
		}
	}
	if notKept != "" {
		fmt.Fprintf(text, "files not kept: %s; the workspace is as it was before the command\n", notKept)
	}
	return nil
}

// runTestCall runs the task's tests (cmd nil) or the named ones over the
// snapshot with the user's tests as they were, as a check does.
func (a *Activities) runTestCall(ctx context.Context, in SandboxCallInput, out SandboxCallOutput, cmd []string) (sandboxCallMemo, error) {
	ci := CheckInput{SnapshotID: in.Snapshot, Language: in.Language, TestCmd: in.TestCmd,
		InputSnapshot: in.InputSnapshot, Protect: in.Protect, AllowTestEdits: in.AllowTestEdits}
	l, err := language(in.Language)
	if err != nil {
		return sandboxCallMemo{}, err
	}
	j, err := a.loadJudged(ctx, ci)
	if err != nil {
		return sandboxCallMemo{}, err
	}
	whole := cmd == nil
	if whole {
		if cmd, err = judgeCommand(ci); err != nil {
			return sandboxCallMemo{}, err
		}
	}
	deps, failed, err := a.callDeps(ctx, in, out, j.files)
	if err != nil || failed != nil {
		return *failed, err
	}
	res, err := a.runSandbox(ctx, in.Snapshot, deps.spec(sandbox.Spec{Profile: in.Language, Files: j.files, Cmd: cmd, Limits: a.limits()}))
	if err != nil {
		return sandboxCallMemo{}, err
	}
	s := summarize(res, l, a.limits().MemoryBytes)
	if whole {
		// Findings as the final check would have them; the restored
		// snapshot it stores is the check's business, not this call's.
		if s, err = a.judge(ctx, ci, j, s); err != nil {
			return sandboxCallMemo{}, err
		}
	} else {
		s = withFindings(s, j.findings)
	}
	var text strings.Builder
	text.WriteString(s.Headline() + "\n")
	text.WriteString(runStatus(res, a.limits()))
	if len(s.Findings) > 0 {
		text.WriteString(integrity.Report(s.Findings) + "\n")
	}
	text.WriteString(output(res, outputBytes(in)))
	out.ExitCode, out.TimedOut, out.Headline = s.ExitCode, s.TimedOut, s.Headline()
	return sandboxCallMemo{Output: out, Text: text.String()}, nil
}

func outputBytes(in SandboxCallInput) int {
	if in.OutputBytes > 0 {
		return in.OutputBytes
	}
	return tools.DefaultLimits.ResultBytes
}

// runStatus is the first lines of a run's result: how it ended.
func runStatus(res sandbox.Result, lim sandbox.Limits) string {
	s := fmt.Sprintf("exit code: %d\n", res.ExitCode)
	if res.TimedOut {
		s += fmt.Sprintf("timed out: killed after %s with everything it started\n", lim.Timeout)
	}
	if res.OOMKilled {
		s += "out of memory: " + oomKilled(lim.MemoryBytes) + "\n"
	}
	return s
}

// oomKilled says why the kernel killed a run's process, as the model and
// the person read it.
func oomKilled(memory int64) string {
	return "killed: memory limit " + bytesize.Format(memory)
}

// output is a run's stdout and stderr, cut to max bytes by keeping their
// head and tail.
func output(res sandbox.Result, max int) string {
	var b strings.Builder
	for _, st := range []struct {
		name, text string
		cut        bool
	}{{"stdout", res.Stdout, res.StdoutTruncated}, {"stderr", res.Stderr, res.StderrTruncated}} {
		if st.text == "" {
			continue
		}
		fmt.Fprintf(&b, "%s:\n%s", st.name, strings.TrimRight(st.text, "\n"))
		if st.cut {
			b.WriteString("\n[the rest of " + st.name + " went past the sandbox's output limit and was dropped]")
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "(no output)\n"
	}
	return tools.Elide(b.String(), max)
}

func headline(res sandbox.Result, changed int) string {
	h := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		h = "timed out"
	}
	if res.OOMKilled {
		h = "out of memory"
	}
	if changed > 0 {
		h += fmt.Sprintf(", %d files changed", changed)
	}
	return h
}

// runDiff is what a run did to the workspace.
type runDiff struct {
	changed []string // created, modified or deleted, in path order
	created map[string]bool
	deleted map[string]bool
	skipped []string // new files not kept: tool caches, binaries
	others  []string // changes to paths the run may not change
	refused string   // why none of it is kept
}

// applyRun returns the workspace as the run left it: before, with the
// files the run created, changed or deleted (after is the whole collected
// workdir). Files in tool caches and new or changed binary files are left
// as they were, and so is every path keep, when set, does not allow.
func applyRun(before, after []workspace.File, keep func(string) bool) ([]workspace.File, runDiff) {
	d := runDiff{created: map[string]bool{}, deleted: map[string]bool{}}
	old := workspace.ByPath(before)
	seen := make(map[string]bool, len(after))
	next := make([]workspace.File, 0, len(after))
	for _, f := range after {
		seen[f.Path] = true
		prev, had := old[f.Path]
		if had && bytes.Equal(prev.Data, f.Data) && prev.FileMode()&0o111 == f.FileMode()&0o111 {
			next = append(next, prev)
			continue
		}
		switch {
		case inCache(f.Path) || isBinary(f.Data):
			d.skipped = append(d.skipped, f.Path)
		case keep != nil && !keep(f.Path):
			d.others = append(d.others, f.Path)
		default:
			next = append(next, f)
			d.changed = append(d.changed, f.Path)
			d.created[f.Path] = !had
			continue
		}
		if had {
			next = append(next, prev)
		}
	}
	for _, f := range before {
		if seen[f.Path] {
			continue
		}
		switch {
		case inCache(f.Path):
		case keep != nil && !keep(f.Path):
			d.others = append(d.others, f.Path)
		default:
			d.changed = append(d.changed, f.Path)
			d.deleted[f.Path] = true
			continue
		}
		next = append(next, f)
	}
	slices.Sort(d.changed)
	slices.Sort(d.others)
	workspace.Sort(next)
	if err := workspace.DefaultLimits.Check(next); err != nil {
		d.refused = err.Error()
	}
	return next, d
}

func inCache(p string) bool {
	return slices.ContainsFunc(strings.Split(p, "/"), workspace.IsCacheDirName)
}

// isBinary is git's test: a NUL byte in the first 8 KiB.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0
}

// describe lists the changes for the model.
func (d runDiff) describe() string {
	var b strings.Builder
	if len(d.changed) == 0 {
		b.WriteString("files changed: none\n")
	} else {
		parts := make([]string, len(d.changed))
		for i, p := range d.changed {
			switch {
			case d.created[p]:
				parts[i] = p + " (new)"
			case d.deleted[p]:
				parts[i] = p + " (deleted)"
			default:
				parts[i] = p
			}
		}
		b.WriteString("files changed: " + joinLimited(parts, 50) + "\n")
	}
	if len(d.skipped) > 0 {
		b.WriteString("not kept (tool caches and binary files): " + joinLimited(d.skipped, 10) + "\n")
	}
	if len(d.others) > 0 {
		b.WriteString("not kept (only manifests and lock files are): " + joinLimited(d.others, 10) + "\n")
	}
	return b.String()
}
