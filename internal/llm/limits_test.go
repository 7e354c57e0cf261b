package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// newLimited is newOpenAI with call limits set as the environment would.
func newLimited(t *testing.T, script llmtest.Script, firstByte, idle, maxAnswer string) llm.Model {
	t.Helper()
	srv := llmtest.New(t, script)
	m, err := llm.New(llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1-mini"}, llm.Env{
		OpenAIKey: "sk-test", OpenAIBaseURL: srv.URL(),
		FirstByteTimeout: firstByte, IdleTimeout: idle, MaxAnswer: maxAnswer,
	})
	if err != nil {
		t.Fatalf("new model: %v", err)
	}
	return m
}

// complete calls the model with a deadline far beyond the limits under
// test: the call must end by a limit, never by this deadline.
func complete(t *testing.T, m llm.Model, req llm.Request) (llm.Response, *llm.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req.System, req.Prompt = system, prompt
	resp, err := m.Complete(ctx, req)
	if err == nil {
		return resp, nil
	}
	if ctx.Err() != nil {
		t.Fatalf("the call ran into the caller's deadline instead of a limit: %v", err)
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return resp, le
}

func TestSilentModelIsCutOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  llmtest.Reply
		stream bool
		want   string
	}{
		{"no headers", llmtest.Reply{Content: answer, Delay: time.Hour}, true, "sent nothing for 300ms"},
		{"no headers, not streamed", llmtest.Reply{Content: answer, Delay: time.Hour}, false, "sent nothing for 300ms"},
		{"headers only", llmtest.Reply{Content: answer, Stall: time.Hour}, true, "sent nothing for 300ms"},
		{"stalls mid-answer", llmtest.Reply{Content: answer, Stall: time.Hour, StallAfter: 16}, true,
			"stopped sending for 200ms in the middle of its answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newLimited(t, llmtest.Fixed(tc.reply), "300ms", "200ms", "")
			_, err := complete(t, m, llm.Request{Stream: tc.stream})
			if err == nil {
				t.Fatal("a silent model answered")
			}
			if !strings.Contains(err.Error(), "model provider openai "+tc.want) || !err.Retryable() {
				t.Errorf("error = %q (kind %s), want a retryable %q", err, err.Kind, tc.want)
			}
			var stall *llm.StallError
			if !errors.As(err, &stall) {
				t.Errorf("error %v does not carry the *llm.StallError", err)
			}
		})
	}
}

// TestSlowButSteadyModelAnswers: once the answer has begun only the idle
// limit applies, so a pause longer than the first-byte limit but shorter
// than the idle one is waited out.
func TestSlowButSteadyModelAnswers(t *testing.T) {
	m := newLimited(t, llmtest.Fixed(llmtest.Reply{Content: answer, Stall: 700 * time.Millisecond, StallAfter: 16}), "400ms", "3s", "")
	resp, err := complete(t, m, llm.Request{Stream: true})
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	if resp.Text != answer {
		t.Errorf("text = %q, want %q", resp.Text, answer)
	}
}

// TestHugeAnswerIsCutWhileRead: the size limit stops the answer as it
// arrives (the streamed text seen never passes it), and the failure is
// not retried, which would pay for another flood.
func TestHugeAnswerIsCutWhileRead(t *testing.T) {
	huge := strings.Repeat("print('flood')\n", 1<<16) // 960 KiB
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "streamed", false: "whole"}[stream]
		t.Run(name, func(t *testing.T) {
			m := newLimited(t, llmtest.Fixed(llmtest.Reply{Content: huge, ChunkBytes: 1 << 10}), "", "", "64KiB")
			seen := 0
			req := llm.Request{}
			if stream {
				req.OnChunk = func(c string) { seen += len(c) }
			}
			_, err := complete(t, m, req)
			if err == nil {
				t.Fatal("a 960 KiB answer passed a 64 KiB limit")
			}
			if !strings.Contains(err.Error(), "more than 64 KiB") || err.Retryable() {
				t.Errorf("error = %q (kind %s), want a final one naming the 64 KiB limit", err, err.Kind)
			}
			if seen > 64<<10 {
				t.Errorf("%d bytes of text were handed on; the limit is %d", seen, 64<<10)
			}
		})
	}
}

func TestLimitsFromEnv(t *testing.T) {
	l, err := llm.Env{FirstByteTimeout: "90s", IdleTimeout: "45s", MaxAnswer: "1MiB"}.Limits()
	if err != nil || l != (llm.Limits{FirstByte: 90 * time.Second, Idle: 45 * time.Second, MaxAnswerBytes: 1 << 20}) {
		t.Errorf("Limits() = %+v, %v", l, err)
	}
	if l, err := (llm.Env{}).Limits(); err != nil || l != llm.DefaultLimits {
		t.Errorf("empty env: Limits() = %+v, %v; want the defaults", l, err)
	}
	_, err = llm.Env{FirstByteTimeout: "soon", IdleTimeout: "-1s", MaxAnswer: "lots"}.Limits()
	for _, name := range []string{llm.EnvFirstByteTimeout, llm.EnvIdleTimeout, llm.EnvMaxAnswer} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("bad values: error %v does not name %s", err, name)
		}
	}
	if _, err := llm.New(llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "k", IdleTimeout: "x"}); !errors.Is(err, llm.ErrBadSpec) {
		t.Errorf("New with a bad limit: error %v, want ErrBadSpec", err)
	}
}

// TestHugeTurnIsCutWhileRead: a turn's text is capped as a completion's
// is, over both SDK-backed protocols: a streamed answer stops at the
// limit (the text handed on never passes it), a whole one is refused, and
// neither is retried. The answer, about 100 KiB, passes the 64 KiB limit
// but not the bound on a whole body's bytes, so the turn itself must
// refuse it.
func TestHugeTurnIsCutWhileRead(t *testing.T) {
	huge := llmtest.Reply{Content: strings.Repeat("print('flood')\n", 7000), ChunkBytes: 1 << 10}
	oa := llmtest.New(t, llmtest.Fixed(huge))
	an := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return huge })
	for _, p := range []struct {
		name string
		spec llm.Spec
		env  llm.Env
	}{
		{"openai", llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: oa.URL(), MaxAnswer: "64KiB"}},
		{"anthropic", llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: an.URL(), MaxAnswer: "64KiB"}},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", p.name, stream), func(t *testing.T) {
				m := mustNew(t, p.spec, p.env)
				seen := 0
				opts := llm.TurnOptions{Stream: stream}
				if stream {
					opts.OnText = func(c string) { seen += len(c) }
				}
				_, err := m.Turn(context.Background(), firstConversation(), tools, opts)
				if e := asError(t, err); !strings.Contains(err.Error(), "more than 64 KiB") || e.Retryable() {
					t.Errorf("error = %v (kind %s), want a final one naming the 64 KiB limit", err, e.Kind)
				}
				if seen > 64<<10 {
					t.Errorf("%d bytes of text were handed on; the limit is %d", seen, 64<<10)
				}
			})
		}
	}
}
