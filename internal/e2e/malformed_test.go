package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// malformedCall is one call of a hostile model's first turn and what the
// tool result sent back for it must say.
type malformedCall struct {
	what string
	call llmtest.ToolCall
	want string
}

const (
	calcBuggy = "def add(a, b):\n    return a - b\n"
	calcFixed = "def add(a, b):\n    return a + b\n"
	calcTests = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
)

// malformedTurn is a turn of every mistake a model can make in the form of
// a call. Calls 0 and 1 share an id, and so do 0 and the run and the
// finish: only the first of each id runs.
func malformedTurn() []malformedCall {
	raw := func(id, name, args string) llmtest.ToolCall {
		return llmtest.ToolCall{ID: id, Name: name, Arguments: args}
	}
	with := func(id, name string, args map[string]any) llmtest.ToolCall {
		c := call(name, args)
		c.ID = id
		return c
	}
	write := func(id, path string) llmtest.ToolCall {
		return with(id, "write", map[string]any{"path": path, "content": "x = 1\n"})
	}
	deep := strings.Repeat(strings.Repeat("d", 99)+"/", 60) + "deep.py" // 6007 bytes, each part short
	return []malformedCall{
		{"first of an id", with("dup", "read", map[string]any{"path": "calc.py"}), "return a - b"},
		{"duplicate id", with("dup", "write", map[string]any{"path": "calc.py", "content": calcFixed}), `its id "dup" is the id of an earlier call`},
		{"empty name", raw("empty", "", `{"path": "calc.py"}`), "it names no tool"},
		{"unknown name", raw("unknown", "exec", `{"command": "ls"}`), `there is no tool "exec"`},
		{"bad JSON", raw("badjson", "write", `{"path": "x.py", "content": "x`), "bad arguments for write"},
		{"missing required argument", with("missing", "edit", map[string]any{"path": "calc.py", "old_text": "a - b"}), `"new_text" is missing`},
		{"256-byte file name", write("longname", strings.Repeat("n", 253)+".py"), "more than the 255 a file system allows"},
		{"6000-byte path", write("longpath", deep), "more than the 4000 allowed"},
		{"over-size argument", with("huge", "write", map[string]any{"path": "huge.txt", "content": strings.Repeat("x", 300<<10)}), "more than the 256 KiB a call may carry"},
		{"write without content", with("nocontent", "write", map[string]any{"path": "empty.py"}), `"content" is missing`},
		{"newline in the name", write("newline", "a\nb.py"), "control character U+000A"},
		{"escape sequence in the name", write("escape", "\x1b[31mred.py"), "control character U+001B"},
		{"duplicate id on run", with("dup", "run", map[string]any{"command": "touch pwned"}), `its id "dup" is the id of an earlier call`},
		{"duplicate id on finish", with("dup", "finish", map[string]any{"summary": "done"}), `its id "dup" is the id of an earlier call`},
	}
}

// unwritableRun makes files whose names a workspace cannot hold: a newline
// and an escape sequence in them.
const unwritableRun = `printf x > "$(printf 'bad\nname.py')"; printf y > "$(printf '\033[31mred.py')"`

// hostile makes every malformed call in its first turn, checks that each
// got a result saying what was wrong, then fixes the bug properly, runs a
// command that makes files of names that cannot be kept (and is told so),
// runs the tests and finishes.
func hostile(p *problems) agent {
	turn0 := malformedTurn()
	return func(v turnView) llmtest.Reply {
		switch v.turn() {
		case 0:
			cs := make([]llmtest.ToolCall, len(turn0))
			for i, m := range turn0 {
				cs[i] = m.call
			}
			return llmtest.Reply{Content: "Trying everything at once.", ToolCalls: cs, ChunkBytes: 64 << 10}
		case 1:
			res := v.lastResults()
			if len(res) != len(turn0) {
				return p.fail("%d results for %d calls", len(res), len(turn0))
			}
			ids := map[string]bool{}
			for i, m := range turn0 {
				if !strings.Contains(res[i], m.want) {
					return p.fail("%s: the result does not say %q:\n%s", m.what, m.want, clipText(res[i], 2000))
				}
				ids[v.calls[0][i].ID] = true
			}
			if len(ids) != len(turn0) {
				return p.fail("the calls sent back share ids: %v", ids)
			}
			return calls(v, "", call("edit", map[string]any{"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}),
				call("run", map[string]any{"command": unwritableRun}), call("run_tests", map[string]any{}))
		case 2:
			res := v.lastResults()
			if len(res) != 3 || !strings.Contains(res[2], "1 passed") {
				return p.fail("the tests do not pass after the fix: %q", res)
			}
			if want := `not kept, for their names (a control character or escape sequence, not UTF-8, or too long): "\x1b[31mred.py", "bad\nname.py"`; !strings.Contains(res[1], want) {
				return p.fail("the run's result does not say %q:\n%s", want, res[1])
			}
			return calls(v, "", call("finish", map[string]any{"summary": "add subtracted; it adds now."}))
		}
		return p.unexpected(v)
	}
}

// TestMalformedToolCallsDoNotFailTheTask: over each wire protocol, a model
// whose first turn holds one of every malformed call (a repeated id, on a
// workspace tool, on run and on finish; no name; an unknown name; bad JSON;
// a missing required argument; a 256-byte file name; a 6000-byte path;
// 300 KiB of arguments; a write without content; a newline and an escape
// sequence in a name) gets a result for each saying what was wrong, under
// ids the provider accepts; a run that makes files of such names is told
// they are not kept; and the task then succeeds with nothing of the refused
// calls in its files.
func TestMalformedToolCallsDoNotFailTheTask(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sb, st, c := services(ctx, t, sandbox.Config{Backend: "bwrap", Profiles: profilesOf("python")})
	input, err := st.PutSnapshot(ctx, []workspace.File{{Path: "calc.py", Data: []byte(calcBuggy)}, {Path: "test_calc.py", Data: []byte(calcTests)}})
	if err != nil {
		t.Fatalf("store the project: %v", err)
	}
	for _, p := range scriptedProviders[:2] { // OpenAI and Anthropic
		t.Run(p.name, func(t *testing.T) {
			started := time.Now()
			var probs problems
			model := hostile(&probs)
			env, requests := p.start(t, func(v turnView) llmtest.Reply { return model.answer("1. Fix add in calc.py.", v) })
			files := runPassingTask(ctx, t, c, &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(env)},
				workflows.TaskInput{Task: "add(2, 3) returns -1; fix it.", Language: "python",
					TestCmd: "python3 -m pytest -q", InputSnapshot: input, Model: p.model, MaxIterations: 1}, &probs)
			var paths []string
			for _, f := range files {
				paths = append(paths, f.Path)
				if f.Path == "calc.py" && string(f.Data) != calcFixed {
					t.Errorf("calc.py = %q, want %q", f.Data, calcFixed)
				}
			}
			if strings.Join(paths, " ") != "calc.py test_calc.py" {
				t.Errorf("the task's files are %q; want only calc.py and test_calc.py", paths)
			}
			reqs := requests()
			if len(reqs) != 4 {
				t.Errorf("%d requests, want 4: the plan and three turns", len(reqs))
			}
			largest := 0
			for _, v := range reqs {
				largest = max(largest, v.bytes)
			}
			t.Logf("%s: task succeeded in %s; the largest request carried %d bytes", p.name, time.Since(started).Round(time.Millisecond), largest)
		})
	}
}
