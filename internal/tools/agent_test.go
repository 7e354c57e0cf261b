package tools

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestKinds(t *testing.T) {
	cases := map[string]Kind{
		"list": Workspace, "read": Workspace, "search": Workspace, "write": Workspace, "edit": Workspace, "delete": Workspace,
		NameRun: Sandbox, NameRunTests: Sandbox, NameInstall: Sandbox, NameFinish: Finish, "rm": Unknown, "": Unknown,
	}
	for name, want := range cases {
		if got := KindOf(name); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", name, got, want)
		}
	}
	var workspace, all []string
	for _, d := range Defs() {
		workspace = append(workspace, d.Name)
	}
	for _, d := range AgentDefs() {
		all = append(all, d.Name)
	}
	if !slices.Equal(workspace, []string{"list", "read", "search", "write", "edit", "delete"}) {
		t.Errorf("Defs = %q, want the workspace tools alone", workspace)
	}
	if !slices.Equal(all, append(workspace, NameRun, NameRunTests, NameInstall, NameFinish)) {
		t.Errorf("AgentDefs = %q", all)
	}
}

// TestCallRefusesOtherKinds checks that Call never runs a sandbox or
// finish call: the model is told, the files are untouched.
func TestCallRefusesOtherKinds(t *testing.T) {
	files := ws("a.txt", "a")
	for _, name := range []string{NameRun, NameRunTests, NameInstall, NameFinish} {
		r := run(t, files, name, map[string]any{"command": "rm a.txt", "summary": "done"}, Limits{})
		check{isErr: true, has: []string{name, "not a workspace tool"}}.verify(t, r)
		if r.Files != nil {
			t.Errorf("%s changed the files", name)
		}
	}
}

func TestAgentToolSchemas(t *testing.T) {
	byName := map[string]Def{}
	for _, d := range AgentDefs() {
		byName[d.Name] = d
	}
	props := func(name string) map[string]any { return byName[name].Parameters["properties"].(map[string]any) }
	tests := props(NameFinish)["tests"].(map[string]any)
	if tests["type"] != "array" || tests["items"].(map[string]any)["type"] != "string" {
		t.Errorf("finish tests schema = %v, want an array of strings", tests)
	}
	if req := byName[NameFinish].Parameters["required"].([]string); !slices.Equal(req, []string{"summary"}) {
		t.Errorf("finish requires %q", req)
	}
	if req := byName[NameRun].Parameters["required"].([]string); !slices.Equal(req, []string{"command"}) {
		t.Errorf("run requires %q", req)
	}
	if props(NameRun)["timeout_seconds"].(map[string]any)["type"] != "integer" {
		t.Errorf("run timeout_seconds is not an integer")
	}
	if _, err := json.Marshal(byName[NameRunTests].Parameters); err != nil {
		t.Fatal(err)
	}
	var f FinishArgs
	if err := DecodeArgs(json.RawMessage(`{"summary":"s","tests":["tests/test_a.py::test_x","TestY"]}`), &f); err != nil ||
		!slices.Equal(f.Tests, []string{"tests/test_a.py::test_x", "TestY"}) {
		t.Fatalf("decode finish: %+v, %v", f, err)
	}
	if err := DecodeArgs(json.RawMessage(`{"command":"ls","timeout":3}`), &RunArgs{}); err == nil {
		t.Fatal("an unknown argument decoded")
	}
}
