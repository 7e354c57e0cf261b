package activities

import (
	"context"
	"encoding/json"
	"fmt"
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
// bare sandbox run of the same command, on the generated repository (over
// 300 files and 2 MiB), in one run per backend: the bare sandbox.Run
// (the files in, the command, its output) against SandboxCall in an
// activity environment (read the transcript, load the snapshot, run with
// the workdir collected, diff it, store the new snapshot, memoize, append
// the result). Runs of the two alternate so that both see the same host.
// Two commands: one that only writes a file (the overhead at its largest
// share) and one that runs a test file. It prints each p50 and the ratio:
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
		sb, err := sandbox.New(ctx, sandbox.Config{Backend: backend, Profiles: []string{"python"}, Warm: []string{"python"}})
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
			var bare, call []time.Duration
			for n := range sandboxCallsPerCommand + 1 { // the first of each warms up
				start := time.Now()
				res, err := sb.Run(ctx, sandbox.Spec{Profile: "python", Files: repo.Files, Cmd: []string{"sh", "-c", c.cmd}, Limits: acts.limits()})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("bare run: %v %+v", err, res)
				}
				took := time.Since(start)
				id := fmt.Sprintf("%s-%d-%d", backend, i, n)
				if err := acts.appendMessages(ctx, id, 0,
					llm.Message{Role: llm.RoleUser, Text: "Fix the discount."},
					llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "run", Arguments: string(args)}}}); err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				val, err := tenv.ExecuteActivity(acts.SandboxCall, SandboxCallInput{Transcript: id, Position: 2, CallID: "c1", Snapshot: snap, Language: "python"})
				var out SandboxCallOutput
				if err == nil {
					err = val.Get(&out)
				}
				if err != nil || out.ExitCode != 0 || len(out.Changed) != 1 {
					b.Fatalf("run call: %v %+v", err, out)
				}
				if n > 0 {
					bare, call = append(bare, took), append(call, time.Since(start))
				}
			}
			ratio := float64(p50(call)) / float64(p50(bare))
			fmt.Printf("  %-14s bare %8.2f ms  call %8.2f ms  ratio %.2fx\n", c.name, ms(p50(bare)), ms(p50(call)), ratio)
			b.ReportMetric(ms(p50(bare)), backend+"-"+c.name+"-bare-p50-ms")
			b.ReportMetric(ms(p50(call)), backend+"-"+c.name+"-call-p50-ms")
			b.ReportMetric(ratio, backend+"-"+c.name+"-ratio")
		}
		st.Close()
		sb.Close()
	}
}
