package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/repogen"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/sandbox"
)

// sandboxCallsPerCommand is how many runs each way makes per command.
const sandboxCallsPerCommand = 20

// BenchmarkSandboxRunCall measures what a run tool call costs over the
// sandbox operation it performs, on the generated repository (over 300
// files and 2 MiB), in one run per backend. Three ways, alternating so
// that all see the same host: a plain sandbox.Run (the files in, the
// command, its output); the same run bringing back the files it wrote
// (Spec.Collect), which is the sandbox operation a run call needs; and
// SandboxCall in an activity environment (that run, plus reading the
// transcript, the diff, storing the new snapshot as a change of the old,
// the memo, appending the result). Two commands: one that only writes a
// file (the overhead at its largest share) and one that runs a test file.
// It prints each p50 and the ratios of the call to both runs:
//
//	go test -run '^$' -bench SandboxRunCall -benchtime 1x ./activities/
func BenchmarkSandboxRunCall(b *testing.B) {
	ctx := context.Background()
	repo := repogen.Generate(repogen.Options{Seed: 1})
	commands := []struct{ name, cmd string }{
		{"write-file", "date +%s%N > scratch.txt"},
		{"one-test-file", "python3 -m pytest -q -p no:cacheprovider " + repo.Bug.Test + "; date +%s%N > scratch.txt"},
	}
	for _, backend := range []string{"bwrap", "docker"} {
		sb, err := sandbox.New(ctx, sandbox.Config{Backend: backend, Profiles: sandbox.ProfilesOf([]lang.Language{languages.MustLookup("python")}), Warm: []string{"python"}})
		if err != nil {
			b.Logf("%s: %v", backend, err)
			continue
		}
		st, err := store.OpenSQLite(ctx, b.TempDir()+"/bench.db")
		if err != nil {
			b.Fatal(err)
		}
		acts := &Activities{Store: st, Sandbox: sb}
		var suite testsuite.WorkflowTestSuite
		tenv := suite.NewTestActivityEnvironment()
		tenv.RegisterActivity(acts)
		snap, err := st.PutSnapshot(ctx, repo.Files)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("%s: run tool call on %d files (%d KiB), %d runs each (p50):\n", backend, len(repo.Files), repo.Size()>>10, sandboxCallsPerCommand)
		for i, c := range commands {
			args, _ := json.Marshal(map[string]string{"command": c.cmd})
			run := func(collect bool) time.Duration {
				start := time.Now()
				res, err := sb.Run(ctx, sandbox.Spec{Profile: "python", Files: repo.Files, Cmd: []string{"sh", "-c", c.cmd}, Limits: acts.limits(), Collect: collect})
				if err != nil || res.ExitCode != 0 || (collect && len(res.Files) != len(repo.Files)+1) {
					b.Fatalf("sandbox run: %v %+v", err, res)
				}
				return time.Since(start)
			}
			callOnce := func(n int) time.Duration {
				id := fmt.Sprintf("%s-%d-%d", backend, i, n)
				if err := acts.appendMessages(ctx, id, 0,
					llm.Message{Role: llm.RoleUser, Text: "Fix the discount."},
					llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "run", Arguments: string(args)}}}); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				val, err := tenv.ExecuteActivity(acts.SandboxCall, SandboxCallInput{Transcript: id, Position: 2, CallID: "c1", Snapshot: snap, Language: "python"})
				var out SandboxCallOutput
				if err == nil {
					err = val.Get(&out)
				}
				if err != nil || out.ExitCode != 0 || len(out.Changed) != 1 {
					b.Fatalf("run call: %v %+v", err, out)
				}
				return time.Since(start)
			}
			var plain, collected, call []time.Duration
			for n := range sandboxCallsPerCommand + 1 { // the first of each warms up
				// Each way goes first, second and third equally often: a
				// warm container pool refills between runs, so the place in
				// the round matters on docker.
				var took [3]time.Duration
				for k := range 3 {
					switch way := (n + k) % 3; way {
					case 0:
						took[way] = run(false)
					case 1:
						took[way] = run(true)
					default:
						took[way] = callOnce(n)
					}
				}
				if n > 0 {
					plain, collected, call = append(plain, took[0]), append(collected, took[1]), append(call, took[2])
				}
			}
			vsCollected := float64(p50(call)) / float64(p50(collected))
			vsPlain := float64(p50(call)) / float64(p50(plain))
			fmt.Printf("  %-14s run %7.2f ms  run+files %7.2f ms  call %7.2f ms  call/(run+files) %.2fx  call/run %.2fx\n",
				c.name, ms(p50(plain)), ms(p50(collected)), ms(p50(call)), vsCollected, vsPlain)
			name := backend + "-" + c.name
			b.ReportMetric(ms(p50(plain)), name+"-run-p50-ms")
			b.ReportMetric(ms(p50(collected)), name+"-run+files-p50-ms")
			b.ReportMetric(ms(p50(call)), name+"-call-p50-ms")
			b.ReportMetric(vsCollected, name+"-call/run+files")
			b.ReportMetric(vsPlain, name+"-call/run")
		}
		st.Close()
		sb.Close()
	}
}
