package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/versions"
	"github.com/autocoder/autocoder/internal/workspace"
)

// installed is what an install call did: the call's output, the result
// the model reads and the workspace after it.
type installed struct {
	in     activities.SandboxCallInput
	out    activities.SandboxCallOutput
	result llm.ToolResult
	files  map[string]string
}

// transcripts numbers the transcripts of the calls a test makes.
var transcripts atomic.Int32

// install makes one install call with args over files, as the model's
// last turn in a transcript of its own, and runs it as SandboxCall does.
func (e *depsEnv) install(t *testing.T, language string, files map[string]string, args map[string]any) installed {
	t.Helper()
	ctx := context.Background()
	var fs []workspace.File
	for p, d := range files {
		fs = append(fs, workspace.File{Path: p, Data: []byte(d)})
	}
	snap, err := e.acts.Store.PutSnapshot(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	tr := fmt.Sprintf("install-%d", transcripts.Add(1))
	if _, err := e.tenv.ExecuteActivity(e.acts.AppendMessages, activities.AppendMessagesInput{Transcript: tr, Messages: []llm.Message{
		{Role: llm.RoleSystem, Text: "You add what the code needs."},
		{Role: llm.RoleUser, Text: "Add the package."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "i1", Name: "install", Arguments: string(raw)}}},
	}}); err != nil {
		t.Fatal(err)
	}
	return e.sandboxCall(t, activities.SandboxCallInput{Transcript: tr, Position: 3, CallID: "i1", Snapshot: snap, Language: language})
}

// sandboxCall runs a call already in the transcript and reads back what it
// appended.
func (e *depsEnv) sandboxCall(t *testing.T, in activities.SandboxCallInput) installed {
	t.Helper()
	v, err := e.tenv.ExecuteActivity(e.acts.SandboxCall, in)
	if err != nil {
		t.Fatal(err)
	}
	got := installed{in: in}
	if err := v.Get(&got.out); err != nil {
		t.Fatal(err)
	}
	entries, err := e.acts.Store.Transcript(context.Background(), in.Transcript)
	if err != nil || len(entries) != in.Position+1 {
		t.Fatalf("transcript after the call: %d entries, %v", len(entries), err)
	}
	var msg llm.Message
	if err := json.Unmarshal(entries[in.Position].Data, &msg); err != nil || msg.Result == nil {
		t.Fatalf("the call's result: %+v, %v", msg, err)
	}
	got.result = *msg.Result
	got.files = e.snapshotFiles(t, got.out.Snapshot)
	return got
}

// wantInstalled fails unless the call succeeded and changed exactly paths.
func wantInstalled(t *testing.T, what string, got installed, paths ...string) {
	t.Helper()
	t.Logf("%s:\n%s", what, got.result.Content)
	if got.result.IsError || got.out.ExitCode != 0 || !slices.Equal(got.out.Changed, paths) {
		t.Fatalf("%s: error %v, exit %d, changed %q (want %q):\n%s", what, got.result.IsError, got.out.ExitCode, got.out.Changed, paths, got.result.Content)
	}
}

// wantRefused fails unless the call is an error result saying want, and
// left the workspace as it was.
func wantRefused(t *testing.T, what string, got installed, before map[string]string, want ...string) {
	t.Helper()
	t.Logf("%s:\n%s", what, got.result.Content)
	if !got.result.IsError || len(got.out.Changed) > 0 || len(got.files) != len(before) {
		t.Errorf("%s: error %v, changed %q, files %q", what, got.result.IsError, got.out.Changed, got.files)
	}
	for _, w := range want {
		if !strings.Contains(got.result.Content, w) {
			t.Errorf("%s: the result says no %q:\n%s", what, w, got.result.Content)
		}
	}
}

// TestInstallToolAddsPythonPackage: on both backends, the install tool
// has pip find a package on a PEP 503 index the test serves, through the
// egress proxy, and adds its requirement to requirements.txt, which is all
// the workspace gets; the next check installs it and the tests importing
// it pass. In a project with a pyproject.toml [project] table and no
// requirements.txt, the requirement goes in its dependencies. The same
// call run again (a retry after a crash) is answered from its memo,
// without pip. A package the index lacks is an error result with pip's
// own message; a spec that smuggles an option is refused before anything
// runs.
func TestInstallToolAddsPythonPackage(t *testing.T) {
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	project := map[string]string{
		"greet.py":      "import greetlib\n\n\ndef greeting():\n    return greetlib.hello()\n",
		"test_greet.py": "from greet import greeting\n\n\ndef test_greeting():\n    assert greeting() == 'hello from greetlib'\n",
	}
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) {
			index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
			e := newDepsEnv(t, backend, []string{index.Host()}, map[string]string{"python": index.URL()})
			got := e.install(t, "python", project, map[string]any{"packages": []string{"greetlib==1.0"}})
			wantInstalled(t, "install greetlib", got, "requirements.txt")
			if got.files["requirements.txt"] != "greetlib==1.0\n" || !strings.Contains(got.result.Content, "files changed: requirements.txt (new)") {
				t.Errorf("requirements.txt %q", got.files["requirements.txt"])
			}
			if n := index.Downloads(); n != 1 {
				t.Errorf("wheel downloads after the install: %d, want 1 (pip's check)", n)
			}
			if s := e.check(t, "python", got.files); !s.Passed || !strings.Contains(s.Deps, "installed in") {
				t.Errorf("the check after the install: passed %v, deps %q:\n%s", s.Passed, s.Deps, s.Output)
			}
			downloads := index.Downloads()
			if again := e.sandboxCall(t, got.in); again.out.Snapshot != got.out.Snapshot || again.result != got.result || index.Downloads() != downloads {
				t.Errorf("the call retried: %+v, %d downloads more", again.out, index.Downloads()-downloads)
			}

			pyproject := map[string]string{"pyproject.toml": "[project]\nname = \"greet\"\nversion = \"0.1\"\ndependencies = []\n", "test_greet.py": project["test_greet.py"], "greet.py": project["greet.py"]}
			got = e.install(t, "python", pyproject, map[string]any{"packages": []string{"greetlib >= 1"}})
			wantInstalled(t, "install into pyproject.toml", got, "pyproject.toml")
			if want := "[project]\nname = \"greet\"\nversion = \"0.1\"\ndependencies = [\"greetlib>=1\"]\n"; got.files["pyproject.toml"] != want {
				t.Errorf("pyproject.toml:\n%s\nwant:\n%s", got.files["pyproject.toml"], want)
			}

			got = e.install(t, "python", project, map[string]any{"packages": []string{"no-such-package==2.0"}})
			wantRefused(t, "a package the index lacks", got, project, "install failed", "No matching distribution found for no-such-package==2.0")

			for _, spec := range []string{"--index-url=http://127.0.0.1:9/simple", "-e ."} {
				got = e.install(t, "python", project, map[string]any{"packages": []string{"greetlib==1.0", spec}})
				wantRefused(t, "a smuggled option", got, project, "is an option, not a package")
			}
		})
	}
}

// TestInstallToolAddsGoModule: the install tool runs go get through the
// egress proxy against the Go module proxy this machine's go command is
// configured with: go.mod requires the module and go.sum holds its lines,
// which is all the workspace gets (the module cache stays out of it), and
// the next check, which downloads what go.mod requires, passes the tests
// that import it. A module the proxy does not have is an error result
// with go's own message.
func TestInstallToolAddsGoModule(t *testing.T) {
	goproxy := versions.Configured(context.Background(), golang.Language().Deps.Versions.Configured)
	e := newDepsEnv(t, "bwrap", nil, map[string]string{"go": goproxy})
	project := map[string]string{
		"go.mod": "module example.com/narrow\n\ngo 1.21\n",
		"narrow.go": `package narrow

import "golang.org/x/text/width"

// Narrow folds full-width letters to their usual width.
func Narrow(s string) string { return width.Fold.String(s) }
`,
		"narrow_test.go": "package narrow\n\nimport \"testing\"\n\nfunc TestNarrow(t *testing.T) {\n\tif got := Narrow(\"ｈｅｌｌｏ\"); got != \"hello\" {\n\t\tt.Fatalf(\"Narrow: %q\", got)\n\t}\n}\n",
	}
	got := e.install(t, "go", project, map[string]any{"packages": []string{"golang.org/x/text@v0.21.0"}})
	wantInstalled(t, "go get golang.org/x/text", got, "go.mod", "go.sum")
	if !strings.Contains(got.files["go.mod"], "require golang.org/x/text v0.21.0") || got.files["go.sum"] != textSum {
		t.Errorf("go.mod:\n%s\ngo.sum:\n%s", got.files["go.mod"], got.files["go.sum"])
	}
	if s := e.check(t, "go", got.files); !s.Passed || !strings.Contains(s.Deps, "installed in") {
		t.Errorf("the check after the install: passed %v, stage %s, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}

	got = e.install(t, "go", project, map[string]any{"packages": []string{"golang.org/x/no-such-module@v1.0.0"}})
	wantRefused(t, "a module the proxy lacks", got, project, "install failed", "go: golang.org/x/no-such-module@v1.0.0: ")
}

// TestInstallToolAddsNpmPackage: on both backends, the install tool has
// npm resolve a package and its scoped dependency against an npm registry
// the test serves, through the egress proxy, and write package.json (an
// exact version; devDependencies with dev) and package-lock.json, which
// is all the workspace gets: no node_modules, and no tarball fetched. The
// next check installs from the lock file and the tests that require the
// package pass. A package the registry lacks is an error result with
// npm's own message.
func TestInstallToolAddsNpmPackage(t *testing.T) {
	for _, backend := range []string{"docker", "bwrap"} {
		t.Run(backend, func(t *testing.T) {
			reg := registrytest.NewNpmRegistry(t, npmPackages()...)
			e := newDepsEnv(t, backend, []string{reg.Host()}, map[string]string{"javascript": reg.URL()})
			project := map[string]string{
				"package.json": `{"name": "app", "version": "1.0.0", "private": true, "scripts": {"test": "tinytest"}}` + "\n",
				"greet.test.js": `const test = require('node:test');
const assert = require('node:assert/strict');
const { loud } = require('greet');

test('greet and its dependency', () => assert.equal(loud(), 'HELLO FROM GREET'));
`,
			}
			got := e.install(t, "javascript", project, map[string]any{"packages": []string{"greet@^1.2.0"}})
			wantInstalled(t, "npm install greet", got, "package-lock.json", "package.json")
			var pkg struct {
				Dependencies, DevDependencies map[string]string
			}
			if err := json.Unmarshal([]byte(got.files["package.json"]), &pkg); err != nil || pkg.Dependencies["greet"] != "1.2.0" {
				t.Errorf("package.json (%v):\n%s", err, got.files["package.json"])
			}
			for _, want := range []string{`"node_modules/greet"`, `"node_modules/@acme/shout"`, `"integrity": "sha512-`} {
				if !strings.Contains(got.files["package-lock.json"], want) {
					t.Errorf("package-lock.json has no %s:\n%s", want, got.files["package-lock.json"])
				}
			}
			if n := reg.Downloads(); n != 0 {
				t.Errorf("%d tarballs fetched by the install, want none", n)
			}

			got = e.install(t, "javascript", got.files, map[string]any{"packages": []string{"tinytest@0.3.0"}, "dev": true})
			wantInstalled(t, "npm install tinytest for the tests", got, "package-lock.json", "package.json")
			if err := json.Unmarshal([]byte(got.files["package.json"]), &pkg); err != nil || pkg.DevDependencies["tinytest"] != "0.3.0" || pkg.Dependencies["greet"] != "1.2.0" {
				t.Errorf("package.json (%v):\n%s", err, got.files["package.json"])
			}
			s := e.check(t, "javascript", got.files)
			if !s.Passed || !strings.Contains(s.Output, "tinytest runs node --test") || !strings.Contains(s.Output, "greet and its dependency") {
				t.Errorf("the check after the installs: passed %v, stage %s, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}

			got = e.install(t, "javascript", project, map[string]any{"packages": []string{"no-such-package@1.0.0"}})
			wantRefused(t, "a package the registry lacks", got, project, "install failed", "404", "no-such-package")
		})
	}
}

// TestInstallToolAddsCrate: on both backends, the install tool has cargo
// add resolve a crate against a sparse registry the test serves, through
// the egress proxy, and write it in Cargo.toml ([dev-dependencies] with
// dev) and Cargo.lock, which is all the workspace gets (not the targets
// the install makes for cargo); the next check vendors what the lock pins
// and the tests that use it pass. A crate the registry lacks is an error result
// with cargo's own message; a spec that is a path is refused before
// anything runs.
func TestInstallToolAddsCrate(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) {
			reg := registrytest.NewCargoRegistry(t, registrytest.Crate{Name: "greetcrate", Version: "1.0.0",
				Lib: "pub fn hello() -> &'static str { \"hello from greetcrate\" }\n"})
			e := newDepsEnv(t, backend, []string{reg.Host()}, map[string]string{"rust": reg.URL()})
			project := map[string]string{
				"Cargo.toml": "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
				"src/lib.rs": "pub fn greeting() -> &'static str {\n    greetcrate::hello()\n}\n\n#[test]\nfn greets() {\n    assert_eq!(greeting(), \"hello from greetcrate\");\n}\n",
			}
			got := e.install(t, "rust", project, map[string]any{"packages": []string{"greetcrate@1.0.0"}})
			wantInstalled(t, "cargo add greetcrate", got, "Cargo.lock", "Cargo.toml")
			if !strings.Contains(got.files["Cargo.toml"], "[dependencies]\ngreetcrate = \"1.0.0\"") ||
				!strings.Contains(got.files["Cargo.lock"], "name = \"greetcrate\"") || reg.Downloads() != 0 {
				t.Errorf("after cargo add (%d downloads, want 0):\n%s\n%s", reg.Downloads(), got.files["Cargo.toml"], got.files["Cargo.lock"])
			}
			if s := e.check(t, "rust", got.files); !s.Passed || !strings.Contains(s.Deps, "installed in") {
				t.Errorf("the check after the install: passed %v, stage %s, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}

			got = e.install(t, "rust", project, map[string]any{"packages": []string{"greetcrate@1.0.0"}, "dev": true})
			wantInstalled(t, "cargo add --dev greetcrate", got, "Cargo.lock", "Cargo.toml")
			if !strings.Contains(got.files["Cargo.toml"], "[dev-dependencies]\ngreetcrate = \"1.0.0\"") {
				t.Errorf("Cargo.toml after cargo add --dev:\n%s", got.files["Cargo.toml"])
			}

			got = e.install(t, "rust", project, map[string]any{"packages": []string{"nosuchcrate@2.0.0"}})
			wantRefused(t, "a crate the registry lacks", got, project, "install failed", "nosuchcrate")
			got = e.install(t, "rust", project, map[string]any{"packages": []string{"../greetcrate"}})
			wantRefused(t, "a path", got, project, "is not a package as the registry names it")
		})
	}
}

// TestInstallToolOfferedWhereItCanRun: a turn of a Python task on a worker
// with the egress proxy is offered install, and the step's first message
// says how to add a package with it; on a worker without the proxy, or for
// a language whose dependencies nothing installs (Java), neither, and an
// install call made anyway is an error result saying why, with nothing
// run.
func TestInstallToolOfferedWhereItCanRun(t *testing.T) {
	var mu sync.Mutex
	var offered [][]string
	var first []string
	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		offered = append(offered, names)
		first = append(first, req.Messages[1].Content)
		return llmtest.Reply{Content: "done"}
	})
	e := newDepsEnv(t, "bwrap", nil, nil)
	e.acts.Models = Models(llm.Env{OpenAIKey: "test-key", OpenAIBaseURL: model.URL()})
	snap, err := e.acts.Store.PutSnapshot(context.Background(), []workspace.File{{Path: "app.py", Data: []byte("x = 1\n")}})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(language string) (tools []string, opening string) {
		t.Helper()
		tr := fmt.Sprintf("offer-%d", transcripts.Add(1))
		if _, err := e.tenv.ExecuteActivity(e.acts.OpenStep, activities.OpenStepInput{Transcript: tr, Task: "add a feature", Language: language,
			Plan: []string{"add it"}, Step: 1, Snapshot: snap}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.tenv.ExecuteActivity(e.acts.ModelTurn, activities.ModelTurnInput{Transcript: tr, Position: 2, Tools: activities.ToolSetAgent,
			Model: "openai:gpt-4.1-mini", Language: language}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return offered[len(offered)-1], first[len(first)-1]
	}
	tools, opening := turn("python")
	if !slices.Contains(tools, "install") || !strings.Contains(opening, "call install") {
		t.Errorf("a Python task with the egress proxy: offered %q; the opening says no install:\n%s", tools, opening)
	}
	tools, opening = turn("java")
	if slices.Contains(tools, "install") || strings.Contains(opening, "call install") || !slices.Contains(tools, "run") {
		t.Errorf("a Java task: offered %q, opening:\n%s", tools, opening)
	}
	got := e.install(t, "java", map[string]string{"pom.xml": "<project/>\n"}, map[string]any{"packages": []string{"junit:junit:4.13.2"}})
	wantRefused(t, "install in a Java task", got, map[string]string{"pom.xml": ""}, "Java packages cannot be added here")

	e.acts.Egress = nil
	tools, opening = turn("python")
	if slices.Contains(tools, "install") || strings.Contains(opening, "call install") {
		t.Errorf("a worker without the egress proxy: offered %q, opening:\n%s", tools, opening)
	}
	project := map[string]string{"app.py": "x = 1\n"}
	got = e.install(t, "python", project, map[string]any{"packages": []string{"requests==2.32.3"}})
	wantRefused(t, "install on a worker without the egress proxy", got, project, "reaches no registry")
}
