package activities

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/tools"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// adds is how the model adds packages to a project of language l (the
// install tool), or the zero Add when this worker cannot: without the
// egress proxy no registry is reachable, and a language the checks
// install nothing for would have the tests fail on what it added.
func (a *Activities) adds(l lang.Language) lang.Add {
	if a.Egress == nil || len(l.Deps.Install) == 0 {
		return lang.Add{}
	}
	return l.Deps.Add
}

// installCall runs an install call: the language's add command
// (lang.Deps.Add) over the workspace, in a sandbox whose only network is
// a route of the egress proxy to the language's registries, as an install
// of the checks has it, with a scratch DepsDir for its caches. The
// manifests and lock files it changes become the workspace, which the
// next run, run_tests or check installs from. The result is the command's
// output and what changed; a failed command changes nothing, and the
// model reads its message as an error.
func (a *Activities) installCall(ctx context.Context, in SandboxCallInput, out SandboxCallOutput, args tools.InstallArgs) (sandboxCallMemo, error) {
	l, err := language(in.Language)
	if err != nil {
		return sandboxCallMemo{}, err
	}
	refuse := func(format string, args ...any) (sandboxCallMemo, error) {
		out.Headline = "install refused"
		return sandboxCallMemo{Output: out, Text: "install: " + fmt.Sprintf(format, args...), IsError: true}, nil
	}
	add := a.adds(l)
	switch {
	case a.Egress == nil:
		return refuse("this worker reaches no registry (it has no egress proxy), so no package can be added: use what the project and the standard library have")
	case add.Command == nil:
		return refuse("%s packages cannot be added here: nothing installs them before the tests; use the standard library", l.Title)
	}
	cmd, err := add.Command(args.Packages, args.Dev)
	if err != nil {
		return refuse("%v", err)
	}
	index, urls, err := installIndex(l, a.DepsIndexes[l.Name])
	if err != nil {
		return refuse("%v", err)
	}
	files, err := a.cachedFiles(ctx, in.Snapshot)
	if err != nil {
		return sandboxCallMemo{}, err
	}
	if err := ownDepsDir(a.depsDir()); err != nil {
		return sandboxCallMemo{}, err
	}
	scratch, err := newInstallDir(a.depsDir())
	if err != nil {
		return sandboxCallMemo{}, fmt.Errorf("install: %w", err)
	}
	defer os.RemoveAll(scratch)
	// Only the manifests go in, as an install of the checks has them: the
	// command reaches the network, and no code of the workspace may run
	// with it (pip would import a pip.py of the project's, npm obey its
	// scripts). What the command leaves in the scratch directory is made
	// removable by the worker, whose user the sandbox's is not.
	sent := addInput(l, add, files)
	lim := a.limits()
	res, refused, err := a.runWithRegistries(ctx, "install", l, index, urls, sandbox.Spec{Profile: l.Name, Files: sent,
		Cmd: append([]string{"sh", "-c", `umask 0 && exec "$@"`, "sh"}, cmd...), Limits: lim, Collect: true,
		Deps: scratch, DepsWritable: true, Env: a.installEnv(l)})
	if err != nil {
		return sandboxCallMemo{}, err
	}
	// The workspace after the run: what came back of the manifests, and
	// the rest as it was.
	inSent := workspace.ByPath(sent)
	for _, f := range files {
		if _, ok := inSent[f.Path]; !ok {
			res.Files = append(res.Files, f)
		}
	}
	var text strings.Builder
	ok := succeeded(res)
	if ok {
		fmt.Fprintf(&text, "added %s\n", strings.Join(args.Packages, " "))
	} else {
		text.WriteString("install failed: nothing was added, the workspace is as it was\n")
	}
	text.WriteString(runStatus(res, lim))
	if len(refused) > 0 {
		fmt.Fprintf(&text, "the egress proxy refused %s: only the configured registries are reachable\n", joinLimited(refused, 5))
	}
	if ok {
		keep := func(p string) bool { return slices.Contains(add.Files, p) }
		if err := a.takeRun(ctx, in.Snapshot, files, res, keep, &out, &text); err != nil {
			return sandboxCallMemo{}, err
		}
	}
	text.WriteString(output(res, outputBytes(in)))
	out.ExitCode, out.TimedOut = res.ExitCode, res.TimedOut
	out.Headline = headline(res, len(out.Changed))
	return sandboxCallMemo{Output: out, Text: text.String(), IsError: !ok}, nil
}

// addInput are the files an add command runs over: the language's
// manifests and the files the command writes (go.sum), where the project
// has them.
func addInput(l lang.Language, add lang.Add, files []workspace.File) []workspace.File {
	out := manifestsOf(l, files)
	have := workspace.ByPath(out)
	for _, f := range files {
		if _, ok := have[f.Path]; !ok && slices.Contains(add.Files, f.Path) {
			out = append(out, f)
		}
	}
	workspace.Sort(out)
	return out
}
