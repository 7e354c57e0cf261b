package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// SetupScript is the project's own setup, run with sh when no setup
// command is given.
const SetupScript = ".autocoder/setup.sh"

// DefaultSetupTimeout bounds a setup run when the worker sets no limit.
const DefaultSetupTimeout = 10 * time.Minute

// ErrTypeSetupFailed is the error of a setup that ran and failed: the
// task ends with it, and no model is called.
const ErrTypeSetupFailed = "SetupFailed"

// SetupInput is the project setup of a task: Command, a shell command
// line, runs over the input snapshot in the language's sandbox.
type SetupInput struct {
	InputSnapshot string `json:"inputSnapshot,omitempty"`
	Command       string `json:"command"`
	Language      string `json:"language"`
}

// SetupOutput is the workspace the task starts from, and how it was had.
type SetupOutput struct {
	// Snapshot is the input snapshot with the setup's changes.
	Snapshot string `json:"snapshot,omitempty"`
	// Changed are the paths the setup created, changed or deleted.
	Changed []string `json:"changed,omitempty"`
	// Cached is set when the changes of an earlier run were applied
	// without running anything.
	Cached bool          `json:"cached,omitempty"`
	Took   time.Duration `json:"took"`
	// Note says how it went, for status: "ran in 1.2s, 3 files changed".
	Note string `json:"note"`
}

// setupCache is what a successful setup run left, kept in the store under
// its setupKey: the files it wrote (a snapshot of them alone) and the
// paths it deleted. The key holds the input snapshot, so they apply to
// the very files they were made over.
type setupCache struct {
	Writes  string   `json:"writes,omitempty"`
	Deletes []string `json:"deletes,omitempty"`
}

// Setup runs the project's setup command once over the input snapshot,
// before the model starts: in the language's sandbox, with the workspace
// writable, the project's dependencies mounted as the checks see them,
// and the network only through the egress proxy, as an install has it.
// What it leaves in the workspace (generated code, fetched files) is the
// task's starting point; what it installs elsewhere ends with the
// sandbox. Its changes are kept by the command, the input snapshot (the
// whole project, content-addressed), the backend and its toolchain (the
// language's image on docker) and the registry: a later setup of the
// same project with the same applies them without running. A run the
// egress proxy refused hosts to, or that had no network, is not kept: it
// may have gone otherwise. A
// setup that fails is the task's end, for the person to fix
// (ErrTypeSetupFailed); a sandbox that cannot run is retried.
func (a *Activities) Setup(ctx context.Context, in SetupInput) (SetupOutput, error) {
	l, err := language(in.Language)
	if err != nil {
		return SetupOutput{}, err
	}
	if strings.TrimSpace(in.Command) == "" || strings.ContainsRune(in.Command, 0) {
		return SetupOutput{}, badInput("the setup command is empty or holds a NUL byte")
	}
	files, err := a.cachedFiles(ctx, in.InputSnapshot)
	if err != nil {
		return SetupOutput{}, err
	}
	toolchain, err := a.toolchain(ctx, l)
	if err != nil {
		return SetupOutput{}, err
	}
	key := setupKey(l, a.Sandbox.Name(), toolchain, a.DepsIndexes[l.Name], in.Command, in.InputSnapshot)
	if out, ok, err := a.setupFromCache(ctx, key, in.InputSnapshot, files); err != nil || ok {
		return out, err
	}
	deps, err := a.installDeps(ctx, l, files)
	if err != nil {
		return SetupOutput{}, err
	}
	if deps.failed != nil {
		// The checks tell the model of it; the setup runs without them.
		deps = depsInstall{note: deps.failed.Deps}
	}
	res, refused, err := a.runSetup(ctx, l, in.Command, files, deps)
	if err != nil {
		return SetupOutput{}, err
	}
	var next []workspace.File
	var d runDiff
	if succeeded(res) && res.FilesErr == nil {
		if next, d = applyRun(files, res.Files, nil); d.refused != "" {
			res.FilesErr = errors.New(d.refused)
		}
	}
	if !succeeded(res) || res.FilesErr != nil {
		return SetupOutput{}, a.setupFailed(in.Command, res, refused, deps.note)
	}
	out := SetupOutput{Snapshot: in.InputSnapshot, Changed: d.changed, Took: res.Duration}
	if len(d.changed) > 0 {
		if out.Snapshot, err = a.putChanged(ctx, in.InputSnapshot, files, next); err != nil {
			return SetupOutput{}, fmt.Errorf("setup: store snapshot: %w", err)
		}
	}
	out.Note = fmt.Sprintf("ran in %s, %s", out.Took.Round(100*time.Millisecond), filesChanged(len(out.Changed)))
	if n := len(d.skipped); n > 0 {
		out.Note += fmt.Sprintf("; %d not kept (binary files, tool caches)", n)
	}
	if len(refused) > 0 {
		out.Note += "; the egress proxy refused " + joinLimited(refused, 5)
	}
	if a.Egress == nil {
		out.Note += "; without network (this worker has no egress proxy)"
	}
	if len(refused) > 0 || a.Egress == nil {
		return out, nil
	}
	if err := a.keepSetup(ctx, key, files, next); err != nil {
		// Only the next task's time is lost.
		activity.GetLogger(ctx).Warn("setup not cached", "error", err)
	}
	return out, nil
}

// runSetup runs the command in the language's sandbox over files, through
// a route of the egress proxy to the language's registries (none on a
// worker without the proxy), and returns the hosts the proxy refused.
func (a *Activities) runSetup(ctx context.Context, l lang.Language, command string, files []workspace.File, deps depsInstall) (sandbox.Result, []string, error) {
	lim := a.limits()
	lim.Timeout = a.setupTimeout()
	spec := deps.spec(sandbox.Spec{Profile: l.Name, Files: files, Cmd: []string{"sh", "-c", command}, Limits: lim, Collect: true})
	if a.Egress == nil {
		res, err := a.runSandbox(ctx, "", spec)
		if err != nil {
			return res, nil, fmt.Errorf("setup: %w", err)
		}
		return res, nil, nil
	}
	index, urls, err := installIndex(l, a.DepsIndexes[l.Name])
	if err != nil {
		index, urls = "", nil
	}
	return a.runWithRegistries(ctx, "setup", l, index, urls, spec)
}

func (a *Activities) setupTimeout() time.Duration {
	if a.SetupTimeout > 0 {
		return a.SetupTimeout
	}
	return DefaultSetupTimeout
}

// setupFailed is the task's end for a setup that ran and failed: how it
// ended, the tail of its output, and what to do.
func (a *Activities) setupFailed(command string, res sandbox.Result, refused []string, depsNote string) error {
	var how string
	switch {
	case res.TimedOut:
		how = fmt.Sprintf("was stopped after %s, its time limit", a.setupTimeout())
	case res.OOMKilled:
		how = "was " + oomKilled(a.limits().MemoryBytes)
	case res.ExitCode != 0:
		how = fmt.Sprintf("exited with status %d", res.ExitCode)
	default:
		how = fmt.Sprintf("succeeded, but its files cannot be kept: %v", res.FilesErr)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "setup failed: %q %s", clip(command, 200), how)
	if len(refused) > 0 {
		fmt.Fprintf(&b, "; the egress proxy refused %s (only the configured registries are reachable)", joinLimited(refused, 5))
	}
	if depsNote != "" {
		fmt.Fprintf(&b, "; %s", depsNote)
	}
	if out := strings.TrimSpace(output(res, outputTail)); out != "" && out != "(no output)" {
		fmt.Fprintf(&b, "\n%s", out)
	}
	b.WriteString("\nFix the setup command (or " + SetupScript + " in the project) and start the task again, or start it without the setup.")
	return temporal.NewNonRetryableApplicationError(b.String(), ErrTypeSetupFailed, nil)
}

// setupFromCache applies the changes of an earlier run of the same setup
// to the input; ok is false when there is none to apply.
func (a *Activities) setupFromCache(ctx context.Context, key, input string, files []workspace.File) (SetupOutput, bool, error) {
	c, found, err := readMemo[setupCache](ctx, a.Store, key)
	if err != nil || !found {
		return SetupOutput{}, false, err
	}
	start := time.Now()
	var writes []workspace.File
	if c.Writes != "" {
		if writes, err = a.Store.GetSnapshot(ctx, c.Writes); err != nil {
			activity.GetLogger(ctx).Warn("cached setup unreadable; running it", "error", err)
			return SetupOutput{}, false, nil
		}
	}
	changed := slices.Clone(c.Deletes)
	for _, f := range writes {
		changed = append(changed, f.Path)
	}
	slices.Sort(changed)
	out := SetupOutput{Snapshot: input, Cached: true, Changed: slices.Compact(changed)}
	if len(out.Changed) > 0 {
		if out.Snapshot, err = a.putChanged(ctx, input, files, workspace.Apply(files, writes, c.Deletes)); err != nil {
			return SetupOutput{}, false, fmt.Errorf("setup: store snapshot: %w", err)
		}
	}
	out.Took = time.Since(start)
	out.Note = "cached, " + filesChanged(len(out.Changed))
	return out, true, nil
}

// keepSetup keeps what the setup did to files (next is the workspace it
// left) under key.
func (a *Activities) keepSetup(ctx context.Context, key string, files, next []workspace.File) error {
	writes, deletes := workspace.Changes(files, next)
	c := setupCache{Deletes: deletes}
	if len(writes) > 0 {
		id, err := a.Store.PutSnapshot(ctx, writes)
		if err != nil {
			return fmt.Errorf("store the setup's files: %w", err)
		}
		c.Writes = id
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode the setup's changes: %w", err)
	}
	return a.putMemo(ctx, key, raw)
}

// setupKey names a setup by what decides what it does: the command, the
// project (its snapshot's id, which its content decides, so that a file
// the setup reads is never missed), the backend and its toolchain, and
// the registry it fetches from.
func setupKey(l lang.Language, backend, toolchain, index, command, snapshot string) string {
	// depsKey's fields, with the command as the install.
	return "setup-" + snapshot + "-" + depsKey(lang.Language{Name: l.Name, Deps: lang.Deps{Install: []string{command}}}, backend, toolchain, index, nil, nil)
}

func filesChanged(n int) string {
	if n == 1 {
		return "1 file changed"
	}
	return fmt.Sprintf("%d files changed", n)
}
