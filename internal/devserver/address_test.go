package devserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/internal/owner"
)

func TestAddressFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadAddress(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no file: %v, want ErrNotRunning", err)
	}
	mine := Address{Frontend: "127.0.0.1:1", Namespace: "default", PID: os.Getpid(), Owner: owner.ID()}
	if err := WriteAddress(dir, mine); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadAddress(dir); err != nil || got.Frontend != mine.Frontend || got.Owner != mine.Owner {
		t.Fatalf("ReadAddress = %+v, %v; want %+v", got, err, mine)
	}

	// A file left by a process that has exited names no server.
	host, _ := os.Hostname()
	dead := mine
	dead.Owner = host + "/" + strconv.Itoa(os.Getpid()) + "/1"
	if err := WriteAddress(dir, dead); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAddress(dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("dead owner: %v, want ErrNotRunning", err)
	}
	if err := os.WriteFile(filepath.Join(dir, AddressFileName), []byte("{\"frontend\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAddress(dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("damaged file: %v, want ErrNotRunning", err)
	}

	// Only the server a file names removes it.
	other := mine
	other.Owner = owner.ID() + "0"
	if err := WriteAddress(dir, other); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAddress(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, AddressFileName)); err != nil {
		t.Errorf("removed another server's address file: %v", err)
	}
	if err := WriteAddress(dir, mine); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAddress(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAddress(dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("after RemoveAddress: %v, want ErrNotRunning", err)
	}
}

func TestLockStartWaitsForTheHolder(t *testing.T) {
	dir := t.TempDir()
	held, err := LockStart(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if second, err := LockStart(ctx, dir); err == nil {
		second.Close()
		t.Fatal("took the start lock while another holder had it")
	}
	released := time.Now()
	go func() {
		time.Sleep(200 * time.Millisecond)
		held.Close()
	}()
	second, err := LockStart(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if time.Since(released) < 200*time.Millisecond {
		t.Error("took the start lock before its holder released it")
	}
}

// TestWaitIdle: a server with an open workflow is busy; once it is
// closed, and no client attached, the server is idle after the period.
func TestWaitIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, err := Start(ctx, Options{DataDir: dir, UIPort: NoUI, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c := dial(t, srv)
	// No worker polls this queue: the workflow stays open.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "open", TaskQueue: "nobody"}, "greet", "x")
	if err != nil {
		t.Fatal(err)
	}
	const idle = 500 * time.Millisecond
	busyCtx, busyCancel := context.WithTimeout(ctx, 3*time.Second)
	defer busyCancel()
	if _, err := WaitIdle(busyCtx, c, srv.Namespace(), dir, idle); err == nil {
		t.Fatal("idle with a workflow open")
	}
	if !Busy(ctx, c, srv.Namespace(), dir, lastAttach(dir)) {
		t.Error("Busy is false with a workflow open")
	}
	if err := c.TerminateWorkflow(ctx, run.GetID(), "", "test done"); err != nil {
		t.Fatal(err)
	}
	// The count follows visibility, which lags a little behind.
	start := time.Now()
	seen, err := WaitIdle(ctx, c, srv.Namespace(), dir, idle)
	if err != nil {
		t.Fatalf("never idle after the workflow closed: %v", err)
	}
	t.Logf("idle %v after the workflow closed", time.Since(start))
	if Busy(ctx, c, srv.Namespace(), dir, seen) {
		t.Error("Busy is true with no workflow open and no client attached")
	}
	if err := Touch(dir); err != nil {
		t.Fatal(err)
	}
	// The server may stall between its idle check and this one: a client
	// that attached just after the check still counts.
	time.Sleep(1500 * time.Millisecond)
	if !Busy(ctx, c, srv.Namespace(), dir, seen) {
		t.Error("Busy is false after a client attached while the server stalled")
	}
}
