package llmtest_test

import (
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// TestTimedServerRecordsCalls: each call is recorded with its prompt key
// and task number when it starts, Await finds a call that has started
// (before or after it is asked), and a given listener is served.
func TestTimedServerRecordsCalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := llmtest.NewTimed(t, ln, regexp.MustCompile(`Task (\d+):`), func(req llmtest.ChatRequest) llmtest.Reply {
		if strings.Contains(req.LastUser(), "Task 2:") {
			<-release
		}
		return llmtest.Reply{Content: "ok"}
	})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server closes: a failed test must not hang on the held call
	if !strings.HasPrefix(srv.URL(), "http://"+ln.Addr().String()) {
		t.Fatalf("URL %s is not the listener's %s", srv.URL(), ln.Addr())
	}
	ask := func(task string) {
		resp := post(t, srv.URL()+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+task+`: add"}]}`)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ask("Task 1")
	ask("Task 1")
	done := make(chan struct{})
	go func() { ask("Task 2"); close(done) }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second, err := srv.Await(ctx, func(c llmtest.TimedCall) bool { return c.Task == 2 })
	if err != nil {
		t.Fatalf("await task 2: %v", err)
	}
	if !second.End.IsZero() {
		t.Errorf("task 2's call ended before its answer was released: %+v", second)
	}
	free()
	<-done

	calls := srv.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls recorded, want 3", len(calls))
	}
	if calls[0].Task != 1 || calls[2].Task != 2 {
		t.Errorf("tasks %d, %d, %d; want 1, 1, 2", calls[0].Task, calls[1].Task, calls[2].Task)
	}
	if calls[0].Prompt != calls[1].Prompt || calls[0].Prompt == calls[2].Prompt {
		t.Errorf("prompt keys %s %s %s: the same prompt must share a key, another must not", calls[0].Prompt, calls[1].Prompt, calls[2].Prompt)
	}
	for i, c := range calls {
		if c.End.Before(c.Start) || c.Cut {
			t.Errorf("call %d: %+v, want an answered call that ended after it started", i, c)
		}
	}
	if first, err := srv.Await(ctx, func(c llmtest.TimedCall) bool { return c.Task == 1 }); err != nil || first.Prompt != calls[0].Prompt {
		t.Errorf("await a call already recorded: %+v, %v", first, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := srv.Await(short, func(c llmtest.TimedCall) bool { return c.Task == 3 }); err == nil {
		t.Error("await a call that never comes returned no error")
	}
}
