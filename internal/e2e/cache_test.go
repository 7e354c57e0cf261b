package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// A reading task: a project of files of about 4,000 tokens each (a read
// returns up to 16 KiB) that a scripted agent reads one per turn before it
// finishes, so each turn's request is the one before it plus a turn; the
// shape whose cost prompt caching cuts.
const (
	readingFileLines = 300
	readingTask      = "Read every module and finish with a summary of what they do."
	readingPlan      = "1. Read every module, then finish with a summary."
)

func readingFiles(n int) []workspace.File {
	files := []workspace.File{{Path: "test_ok.py", Data: []byte("def test_ok():\n    assert True\n")}}
	for i := range n {
		var b strings.Builder
		for l := range readingFileLines {
			fmt.Fprintf(&b, "VALUE_%03d_%03d = %d  # a constant of module %d\n", i, l, i*l, i)
		}
		files = append(files, workspace.File{Path: fmt.Sprintf("mod_%02d.py", i), Data: []byte(b.String())})
	}
	return files
}

// readingReply is the agent's answer once it has taken turns turns: a
// read of the next module, or, after finishAfter turns, finish. A request
// without tools is the plan's.
func readingReply(tools bool, turns, finishAfter int) llmtest.Reply {
	switch {
	case !tools:
		return llmtest.Reply{Content: readingPlan}
	case turns >= finishAfter:
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("call_%d", turns), Name: "finish",
			Arguments: `{"summary":"Every module defines constants."}`}}}
	}
	return llmtest.Reply{Content: "Next module.", ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("call_%d", turns), Name: "read",
		Arguments: fmt.Sprintf(`{"path":"mod_%02d.py"}`, turns)}}}
}

func assistantTurns[M any](msgs []M, role func(M) string) int {
	n := 0
	for _, m := range msgs {
		if role(m) == "assistant" {
			n++
		}
	}
	return n
}

// cachedRequest is one request of a reading task as the scripted server
// saw it, the same for both protocols.
type cachedRequest struct {
	body               []byte
	tools              bool
	input, read, write int // tokens; write only on Anthropic
	output             int // the reply's tokens
}

// readingProvider serves the reading agent over one wire protocol.
type readingProvider struct {
	name, model string
	start       func(tb testing.TB, finishAfter int, noCache bool) (llm.Env, func() []cachedRequest)
}

func replyTokens(r llmtest.Reply) int {
	n := llmtest.CountTokens(r.Content)
	for _, c := range r.ToolCalls {
		n += llmtest.CountTokens(c.Name) + llmtest.CountTokens(c.Arguments)
	}
	return n
}

var readingProviders = []readingProvider{
	{"anthropic", "anthropic:claude-sonnet-4-5", func(tb testing.TB, finishAfter int, noCache bool) (llm.Env, func() []cachedRequest) {
		srv := llmtest.NewAnthropic(tb, func(req llmtest.MessagesRequest) llmtest.Reply {
			return readingReply(len(req.Tools) > 0, assistantTurns(req.Messages, func(m llmtest.AnthropicMessage) string { return m.Role }), finishAfter)
		})
		return llm.Env{AnthropicKey: "test-key", AnthropicBaseURL: srv.URL(), NoPromptCache: noCache}, func() []cachedRequest {
			var out []cachedRequest
			for _, r := range srv.Requests() {
				reply := readingReply(len(r.Tools) > 0, assistantTurns(r.Messages, func(m llmtest.AnthropicMessage) string { return m.Role }), finishAfter)
				out = append(out, cachedRequest{body: r.Body, tools: len(r.Tools) > 0, input: r.InputTokens,
					read: r.CacheReadTokens, write: r.CacheWriteTokens, output: replyTokens(reply)})
			}
			return out
		}
	}},
	{"openai", "openai:gpt-4.1", func(tb testing.TB, finishAfter int, _ bool) (llm.Env, func() []cachedRequest) {
		srv := llmtest.New(tb, func(req llmtest.ChatRequest) llmtest.Reply {
			return readingReply(len(req.Tools) > 0, assistantTurns(req.Messages, func(m llmtest.Message) string { return m.Role }), finishAfter)
		})
		return llm.Env{OpenAIKey: "test-key", OpenAIBaseURL: srv.URL()}, func() []cachedRequest {
			var out []cachedRequest
			for _, r := range srv.Requests() {
				reply := readingReply(len(r.Tools) > 0, assistantTurns(r.Messages, func(m llmtest.Message) string { return m.Role }), finishAfter)
				prompt := 3
				for _, m := range r.Messages {
					prompt += 3 + llmtest.CountTokens(m.Content)
					for _, c := range m.ToolCalls {
						prompt += llmtest.CountTokens(c.Name) + llmtest.CountTokens(c.Arguments)
					}
				}
				out = append(out, cachedRequest{body: r.Body, tools: len(r.Tools) > 0, input: prompt, read: r.CachedTokens, output: replyTokens(reply)})
			}
			return out
		}
	}},
}

// readingRun is a reading task run on an in-process worker.
type readingRun struct {
	id       string
	tc       *taskclient.Client
	requests func() []cachedRequest
	stop     func()
}

func startReading(ctx context.Context, tb testing.TB, st store.Store, sb sandbox.Runner, c client.Client, p readingProvider, modules, finishAfter int, noCache bool, budgetUSD float64) readingRun {
	tb.Helper()
	env, requests := p.start(tb, finishAfter, noCache)
	snap, err := st.PutSnapshot(ctx, readingFiles(modules))
	if err != nil {
		tb.Fatal(err)
	}
	w := worker.New(c, &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(env)}, worker.Options{})
	if err := w.Start(); err != nil {
		tb.Fatalf("start worker: %v", err)
	}
	tc := taskClient(c)
	run, err := tc.Start(ctx, workflows.TaskInput{Task: readingTask, Language: "python",
		InputSnapshot: snap, Model: p.model, MaxIterations: 1, BudgetUSD: budgetUSD,
		Agent: workflows.AgentLimits{MaxTurns: finishAfter + 5}}, taskclient.StartOptions{})
	if err != nil {
		w.Stop()
		tb.Fatalf("start task: %v", err)
	}
	return readingRun{id: run.ID, tc: tc, requests: requests, stop: w.Stop}
}

// breakpointMark is a cache breakpoint as the Anthropic client writes it.
var breakpointMark = regexp.MustCompile(`,"cache_control":\{"type":"ephemeral"\}`)

// prefixBreaks lists the tool turns whose request does not begin, byte for
// byte but for cache breakpoints, with the tool turn before it: the same
// fields besides the messages, and the earlier turn's messages first.
func prefixBreaks(t testing.TB, reqs []cachedRequest) []string {
	split := func(body []byte) (string, []json.RawMessage) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatal(err)
		}
		var msgs []json.RawMessage
		if err := json.Unmarshal(fields["messages"], &msgs); err != nil {
			t.Fatal(err)
		}
		delete(fields, "messages")
		head, _ := json.Marshal(fields) // raw fields always encode
		return string(breakpointMark.ReplaceAll(head, nil)), msgs
	}
	var breaks []string
	var prevHead string
	var prev []json.RawMessage
	turn := 0
	for _, r := range reqs {
		if !r.tools {
			continue
		}
		head, msgs := split(r.body)
		if turn > 0 {
			switch {
			case head != prevHead:
				breaks = append(breaks, fmt.Sprintf("turn %d: fields besides the messages changed", turn))
			case len(msgs) < len(prev):
				breaks = append(breaks, fmt.Sprintf("turn %d: %d messages, the turn before sent %d", turn, len(msgs), len(prev)))
			default:
				for i := range prev {
					if !bytes.Equal(breakpointMark.ReplaceAll(msgs[i], nil), breakpointMark.ReplaceAll(prev[i], nil)) {
						breaks = append(breaks, fmt.Sprintf("turn %d: message %d differs from the turn before", turn, i))
						break
					}
				}
			}
		}
		prevHead, prev = head, msgs
		turn++
	}
	return breaks
}

// TestToolLoopRequestsKeepTheirPrefix: through the whole tool loop (the
// workflow, the turn activity with its context budget, each provider's
// client), every turn's request begins with the request of the turn
// before, byte for byte, and the provider's cache serves that prefix,
// which the task's usage counts as cached.
func TestToolLoopRequestsKeepTheirPrefix(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb, st, c := services(ctx, t, sandbox.Config{Profiles: profilesOf("python")})
	const turns = 8
	for _, p := range readingProviders {
		t.Run(p.name, func(t *testing.T) {
			run := startReading(ctx, t, st, sb, c, p, turns, turns, false, 0)
			defer run.stop()
			res, err := run.tc.Wait(ctx, run.id)
			if err != nil {
				t.Fatalf("task failed: %v", err)
			}
			reqs := run.requests()
			if n := len(reqs); n != turns+2 {
				t.Errorf("%d requests, want the plan and %d turns", n, turns+1)
			}
			for _, b := range prefixBreaks(t, reqs) {
				t.Error(b)
			}
			u := res.Status.Usage
			if u.CachedTokens == 0 || float64(u.CachedTokens) < 0.5*float64(u.PromptTokens) {
				t.Errorf("usage %+v: want over half the input read from the cache", u)
			}
			t.Logf("%s: %d in (%d cached, %d written), %d out, $%.4f", p.name, u.PromptTokens, u.CachedTokens, u.CacheWriteTokens, u.CompletionTokens, u.CostUSD)
		})
	}
}

// TestBudgetCountsCachedInput: --budget-usd stops a task at the gate once
// what it truly cost, cache reads and writes at their own prices, passes
// the budget; not earlier, when the same tokens all priced as fresh input
// would have passed it. The budget is set where the two differ by turns.
func TestBudgetCountsCachedInput(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb, st, c := services(ctx, t, sandbox.Config{Profiles: profilesOf("python")})
	const budget = 0.10
	p := readingProviders[0] // anthropic: breakpoints, reads and writes
	run := startReading(ctx, t, st, sb, c, p, 30, 30, false, budget)
	defer run.stop()

	var st0 workflows.Status
	for {
		s, err := run.tc.Status(ctx, run.id)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if s.Pending != nil && s.Pending.Kind == workflows.GateBudget {
			st0 = s
			break
		}
		if s.Phase.Done() {
			t.Fatalf("task ended (%s, %s) without asking for more budget", s.Phase, s.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
	reqs := run.requests()
	if err := run.tc.Reject(ctx, run.id, workflows.RejectSignal{Reason: "enough"}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.tc.Wait(ctx, run.id); err == nil || !strings.Contains(err.Error(), "budget exceeded") {
		t.Errorf("task after the budget was refused: %v", err)
	}

	spec, _ := llm.ParseSpec(p.model)
	price, _ := llm.PriceOf(spec.Model)
	var trueCost, naiveCost float64
	naiveAt := 0 // the call after which fresh-priced input passes the budget
	for i, r := range reqs {
		trueCost += price.Cost(llm.Usage{InputTokens: r.input, CacheReadTokens: r.read, CacheWriteTokens: r.write, OutputTokens: r.output})
		naiveCost += price.Cost(llm.Usage{InputTokens: r.input, OutputTokens: r.output})
		if naiveAt == 0 && naiveCost > budget {
			naiveAt = i + 1
		}
		if i < len(reqs)-1 && trueCost > budget {
			t.Errorf("call %d: true cost $%.4f passed the budget, but the gate came after call %d", i+1, trueCost, len(reqs))
		}
	}
	if trueCost <= budget {
		t.Errorf("gate after %d calls at a true cost of $%.4f, within the budget of $%.2f", len(reqs), trueCost, budget)
	}
	if naiveAt == 0 || naiveAt > len(reqs)-2 {
		t.Errorf("input priced as fresh passes the budget after call %d of %d: the test does not tell the costs apart", naiveAt, len(reqs))
	}
	if got := st0.Usage.CostUSD; got < trueCost-1e-9 || got > trueCost+1e-9 {
		t.Errorf("status cost $%.6f, the requests cost $%.6f", got, trueCost)
	}
	t.Logf("gate after call %d at $%.4f (fresh-priced input: $%.4f, past the budget after call %d)", len(reqs), trueCost, naiveCost, naiveAt)
}

// BenchmarkPromptCaching runs the 30-turn reading task (a read of about
// 4,000 tokens each turn, then finish; the default context budget, so
// older reads are elided once the conversation outgrows it) against the
// scripted Anthropic server with cache breakpoints and without, and
// against the scripted OpenAI server, which caches on its own. It prints
// the input cost at list prices with the cache and without it (Anthropic
// target: at most 0.35x), the share of OpenAI's input read from the cache
// (target: at least 70%), and the turns whose request did not begin with
// the turn before's (eliding rewrites the prefix; nothing else may).
//
//	go test -run '^$' -bench PromptCaching -benchtime 1x ./internal/e2e/
func BenchmarkPromptCaching(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sb, st, c := benchServices(ctx, b)
	const turns = 30
	run := func(p readingProvider, noCache bool) (activities.Usage, int) {
		r := startReading(ctx, b, st, sb, c, p, turns, turns, noCache, 0)
		defer r.stop()
		res, err := r.tc.Wait(ctx, r.id)
		if err != nil {
			b.Fatalf("%s (cache off: %v): task failed: %v", p.name, noCache, err)
		}
		return res.Status.Usage, len(prefixBreaks(b, r.requests()))
	}
	inputCost := func(p readingProvider, u activities.Usage) float64 {
		spec, _ := llm.ParseSpec(p.model)
		price, _ := llm.PriceOf(spec.Model)
		return price.Cost(llm.Usage{InputTokens: u.PromptTokens, CacheReadTokens: u.CachedTokens, CacheWriteTokens: u.CacheWriteTokens})
	}
	for range b.N {
		an, oa := readingProviders[0], readingProviders[1]
		on, breaks := run(an, false)
		off, _ := run(an, true)
		ratio := inputCost(an, on) / inputCost(an, off)
		fmt.Printf("anthropic, %d turns: input cost $%.4f with cache breakpoints (%d in: %d cached, %d written), $%.4f without (%d in); "+
			"ratio %.3f (target at most 0.35: %s); %d turns rewrote the prefix\n",
			turns, inputCost(an, on), on.PromptTokens, on.CachedTokens, on.CacheWriteTokens, inputCost(an, off), off.PromptTokens,
			ratio, verdict(ratio <= 0.35), breaks)
		b.ReportMetric(ratio, "anthropic-input-cost-ratio")

		u, breaks := run(oa, false)
		share := float64(u.CachedTokens) / float64(u.PromptTokens)
		fresh := u
		fresh.CachedTokens = 0
		fmt.Printf("openai, %d turns: %d of %d input tokens cached, share %.3f (target at least 0.70: %s); "+
			"input cost $%.4f, $%.4f priced all fresh (ratio %.3f); %d turns rewrote the prefix\n",
			turns, u.CachedTokens, u.PromptTokens, share, verdict(share >= 0.70), inputCost(oa, u), inputCost(oa, fresh),
			inputCost(oa, u)/inputCost(oa, fresh), breaks)
		b.ReportMetric(share, "openai-cached-share")
	}
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}
