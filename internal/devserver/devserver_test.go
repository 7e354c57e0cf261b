package devserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

const (
	// childDirEnv makes TestHelperCrashingServer run, as a child process
	// that the parent test kills.
	childDirEnv = "AUTOCODER_DEVSERVER_CHILD_DIR"
	ranPrefix   = "DEVSERVER-RAN "
	taskQueue   = "devserver-test"
	crashedID   = "wf-before-crash"
	restartedID = "wf-before-restart"
	taskSA      = "AutocoderTask"
	attemptSA   = "AutocoderAttempt"
)

func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greeting, name).Get(ctx, &out)
	return out, err
}

func greeting(_ context.Context, name string) (string, error) {
	return "hello " + name, nil
}

func testLogger() *slog.Logger {
	// Server goroutines may still log after a test returns, so not t.Output.
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func dial(t *testing.T, srv *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  srv.FrontendAddress(),
		Namespace: srv.Namespace(),
		Logger:    sdklog.NewStructuredLogger(testLogger()),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", srv.FrontendAddress(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// runGreet runs greet to completion with a worker of its own.
func runGreet(ctx context.Context, t *testing.T, c client.Client, id, name string, sa temporal.SearchAttributes) client.WorkflowRun {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivity(greeting)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             taskQueue,
		TypedSearchAttributes: sa,
	}, greet, name)
	if err != nil {
		t.Fatalf("start workflow %s: %v", id, err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("workflow %s: %v", id, err)
	}
	if want := "hello " + name; out != want {
		t.Fatalf("workflow %s result = %q, want %q", id, out, want)
	}
	return run
}

// TestHelperCrashingServer is the child half of TestRestartKeepsHistory: it
// runs a workflow, reports it, and waits to be killed.
func TestHelperCrashingServer(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestRestartKeepsHistory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{
		DataDir:          dir,
		UIPort:           NoUI,
		SearchAttributes: map[string]enums.IndexedValueType{taskSA: enums.INDEXED_VALUE_TYPE_KEYWORD},
		Logger:           testLogger(),
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	run := runGreet(ctx, t, dial(t, srv), crashedID, "crash", temporal.SearchAttributes{})
	fmt.Printf("%s%s %s\n", ranPrefix, run.GetID(), run.GetRunID())
	select {} // killed by the parent, never stopped cleanly
}

// startCrashingChild runs TestHelperCrashingServer in a child process on dir,
// waits until its workflow completed, and kills it with SIGKILL.
func startCrashingChild(t *testing.T, dir string) (runID string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrashingServer$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), ranPrefix); ok {
				lines <- rest
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(90 * time.Second):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	id, runID, ok := strings.Cut(line, " ")
	if !ok || id != crashedID {
		t.Fatalf("child did not report its workflow (got %q)", line)
	}
	return runID
}

// assertCompleted checks, from the server's persisted history, that the
// workflow completed with the expected result.
func assertCompleted(ctx context.Context, t *testing.T, c client.Client, id, runID, wantResult string) {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("workflow %s status = %v, want completed", id, got)
	}
	it := c.GetWorkflowHistory(ctx, id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	if !it.HasNext() {
		t.Fatalf("workflow %s: no close event in history", id)
	}
	ev, err := it.Next()
	if err != nil {
		t.Fatalf("history of %s: %v", id, err)
	}
	attrs := ev.GetWorkflowExecutionCompletedEventAttributes()
	if attrs == nil {
		t.Fatalf("workflow %s close event = %v, want completed", id, ev.GetEventType())
	}
	var got string
	if err := converter.GetDefaultDataConverter().FromPayloads(attrs.GetResult(), &got); err != nil {
		t.Fatalf("decode result of %s: %v", id, err)
	}
	if got != wantResult {
		t.Fatalf("workflow %s persisted result = %q, want %q", id, got, wantResult)
	}
}

func httpGet(ctx context.Context, t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, string(body)
}

func TestRestartKeepsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Temporal servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	began := time.Now()

	// 1. A process runs a workflow on a fresh data dir and crashes.
	crashedRun := startCrashingChild(t, dir)
	t.Logf("child ran %s and was killed after %v", crashedID, time.Since(began))

	// 2. This process starts on the same file with the UI and one more search attribute.
	wantSA := map[string]enums.IndexedValueType{
		taskSA:    enums.INDEXED_VALUE_TYPE_KEYWORD,
		attemptSA: enums.INDEXED_VALUE_TYPE_INT,
	}
	started := time.Now()
	srv, err := Start(ctx, Options{DataDir: dir, SearchAttributes: wantSA, Logger: testLogger()})
	if err != nil {
		t.Fatalf("start after crash: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	t.Logf("restart after crash took %v", time.Since(started))
	if _, err := os.Stat(filepath.Join(dir, DatabaseFileName)); err != nil {
		t.Fatalf("database file: %v", err)
	}
	c := dial(t, srv)
	assertCompleted(ctx, t, c, crashedID, crashedRun, "hello crash")

	sa := temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyKeyword(taskSA).ValueSet("task-1"),
		temporal.NewSearchAttributeKeyInt64(attemptSA).ValueSet(2),
	)
	restartedRun := runGreet(ctx, t, c, restartedID, "restart", sa).GetRunID()

	t.Run("search attributes registered", func(t *testing.T) {
		got, err := customSearchAttributes(ctx, c.OperatorService(), srv.Namespace())
		if err != nil {
			t.Fatal(err)
		}
		for name, typ := range wantSA {
			if got[name] != typ {
				t.Errorf("search attribute %s = %v, want %v (all: %v)", name, got[name], typ, got)
			}
		}
	})

	t.Run("ui", func(t *testing.T) {
		tests := []struct {
			name, url, wantType, wantBody string
		}{
			{"root", srv.UIURL() + "/", "text/html", "<html"},
			{"workflow page", srv.WorkflowURL(srv.Namespace(), restartedID), "text/html", "<html"},
			// The UI's API proxies to the frontend, so this proves where it points.
			{"api describe", srv.UIURL() + "/api/v1/namespaces/" + srv.Namespace() + "/workflows/" + restartedID, "application/json", restartedRun},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, body := httpGet(ctx, t, tt.url)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s = %d: %.200s", tt.url, resp.StatusCode, body)
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantType) {
					t.Errorf("GET %s Content-Type = %q, want %s", tt.url, ct, tt.wantType)
				}
				if !strings.Contains(strings.ToLower(body), strings.ToLower(tt.wantBody)) {
					t.Errorf("GET %s body lacks %q: %.200s", tt.url, tt.wantBody, body)
				}
			})
		}
	})

	t.Run("rejects busy resources", func(t *testing.T) {
		tests := []struct {
			name string
			opts Options
			want error
		}{
			{"same data dir", Options{DataDir: dir, UIPort: NoUI}, ErrDataDirLocked},
			{"same frontend port", Options{DataDir: t.TempDir(), FrontendPort: srv.frontendPort, UIPort: NoUI}, ErrPortInUse},
			{"same ui port", Options{DataDir: t.TempDir(), UIPort: srv.uiPort}, ErrPortInUse},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				other, err := Start(ctx, tt.opts)
				if err == nil {
					_ = other.Stop()
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("Start = %v, want %v", err, tt.want)
				}
			})
		}
	})

	if err := srv.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// 3. A conflicting search attribute type is refused, and the refused
	// start releases the data dir for the next one.
	_, err = Start(ctx, Options{
		DataDir:          dir,
		UIPort:           NoUI,
		SearchAttributes: map[string]enums.IndexedValueType{taskSA: enums.INDEXED_VALUE_TYPE_INT},
		Logger:           testLogger(),
	})
	var conflict *SearchAttributeConflictError
	if !errors.As(err, &conflict) || conflict.Name != taskSA {
		t.Fatalf("start with conflicting search attribute = %v, want SearchAttributeConflictError for %s", err, taskSA)
	}

	// 4. A clean restart in this process still finds both workflows.
	srv2, err := Start(ctx, Options{DataDir: dir, UIPort: NoUI, Logger: testLogger()})
	if err != nil {
		t.Fatalf("start after stop: %v", err)
	}
	t.Cleanup(func() { _ = srv2.Stop() })
	c2 := dial(t, srv2)
	assertCompleted(ctx, t, c2, crashedID, crashedRun, "hello crash")
	assertCompleted(ctx, t, c2, restartedID, restartedRun, "hello restart")
	list, err := c2.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: srv2.Namespace(),
		Query:     taskSA + ` = "task-1"`,
	})
	if err != nil {
		t.Fatalf("list by search attribute: %v", err)
	}
	if ex := list.GetExecutions(); len(ex) != 1 || ex[0].GetExecution().GetWorkflowId() != restartedID {
		t.Fatalf("list by %s = %v, want only %s", taskSA, ex, restartedID)
	}
	t.Logf("whole scenario took %v", time.Since(began))
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantDir string
		wantErr bool
	}{
		{name: "explicit", opts: Options{DataDir: "/data"}, wantDir: "/data"},
		// The data dir is internal/config's to resolve: none is an error.
		{name: "no data dir", wantErr: true},
		{name: "frontend port too big", opts: Options{DataDir: "/data", FrontendPort: 70000}, wantErr: true},
		{name: "negative frontend port", opts: Options{DataDir: "/data", FrontendPort: -1}, wantErr: true},
		{name: "ui port below NoUI", opts: Options{DataDir: "/data", UIPort: -2}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveOptions(tt.opts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("resolveOptions error = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got.DataDir != tt.wantDir || got.Namespace != DefaultNamespace ||
				got.Retention != DefaultRetention || got.Logger == nil {
				t.Fatalf("resolveOptions = %+v, want dir %s and defaults", got, tt.wantDir)
			}
		})
	}
	if d := DefaultOptions(); d.FrontendPort != 7233 || d.UIPort != 8233 {
		t.Fatalf("DefaultOptions = %+v", d)
	}
}

func TestURLs(t *testing.T) {
	tests := []struct {
		name         string
		srv          *Server
		ns, id       string
		wantFrontend string
		wantUI       string
		wantWorkflow string
	}{
		{
			name: "ui", srv: &Server{frontendPort: 7233, uiPort: 8233}, ns: "default", id: "task-42",
			wantFrontend: "127.0.0.1:7233", wantUI: "http://127.0.0.1:8233",
			wantWorkflow: "http://127.0.0.1:8233/namespaces/default/workflows/task-42",
		},
		{
			name: "escaped id", srv: &Server{frontendPort: 1, uiPort: 2}, ns: "my ns", id: "a/b?c",
			wantFrontend: "127.0.0.1:1", wantUI: "http://127.0.0.1:2",
			wantWorkflow: "http://127.0.0.1:2/namespaces/my%20ns/workflows/a%2Fb%3Fc",
		},
		{name: "no ui", srv: &Server{frontendPort: 5, uiPort: NoUI}, ns: "default", id: "x", wantFrontend: "127.0.0.1:5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.srv.FrontendAddress(); got != tt.wantFrontend {
				t.Errorf("FrontendAddress = %q, want %q", got, tt.wantFrontend)
			}
			if got := tt.srv.UIURL(); got != tt.wantUI {
				t.Errorf("UIURL = %q, want %q", got, tt.wantUI)
			}
			if got := tt.srv.WorkflowURL(tt.ns, tt.id); got != tt.wantWorkflow {
				t.Errorf("WorkflowURL = %q, want %q", got, tt.wantWorkflow)
			}
		})
	}
}

// recorder is a slog.Handler that keeps every record it is given.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func TestServerLogger(t *testing.T) {
	tests := []struct {
		name      string
		threshold slog.Level
		log       func(l serverLogger)
		wantLevel []slog.Level
		wantKeys  [][]string // attribute keys, record by record
	}{
		{"info dropped", minServerLevel, func(l serverLogger) { l.Info("started", tag.NewStringTag("k", "v")) }, nil, nil},
		{"debug dropped", minServerLevel, func(l serverLogger) { l.Debug("detail") }, nil, nil},
		{"warn kept", minServerLevel, func(l serverLogger) { l.Warn("slow", tag.NewInt("n", 3)) }, []slog.Level{slog.LevelWarn}, [][]string{{"n"}}},
		{"fatal logged as error", minServerLevel, func(l serverLogger) { l.Fatal("boom") }, []slog.Level{slog.LevelError}, [][]string{nil}},
		{"with", minServerLevel, func(l serverLogger) {
			// Two loggers derived from one keep their own tags.
			base := l.With(tag.NewStringTag("svc", "x"))
			log.With(base, tag.NewStringTag("a", "1")).Error("e", tag.NewInt("n", 1))
			log.With(base, tag.NewStringTag("b", "2")).Error("e", tag.NewInt("n", 2))
		}, []slog.Level{slog.LevelError, slog.LevelError}, [][]string{{"svc", "a", "n"}, {"svc", "b", "n"}}},
		{"muted while stopping", stoppingLevel, func(l serverLogger) { l.Error("canceled"); l.Fatal("canceled") }, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			var level slog.LevelVar
			level.Set(tt.threshold)
			tt.log(newServerLogger(slog.New(rec), &level))
			var got []slog.Level
			for _, r := range rec.records {
				got = append(got, r.Level)
			}
			if !slices.Equal(got, tt.wantLevel) {
				t.Fatalf("levels = %v, want %v", got, tt.wantLevel)
			}
			for i, r := range rec.records {
				var keys []string
				r.Attrs(func(a slog.Attr) bool { keys = append(keys, a.Key); return true })
				if want := tt.wantKeys[i]; !slices.Equal(keys, want) {
					t.Errorf("record %d has attributes %v, want %v", i, keys, want)
				}
			}
		})
	}
}
