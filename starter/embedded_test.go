package starter

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/testenv"
)

// A client that arrives while a server stops on a signal finds no address
// file, takes the start lock and starts a server: that server must find
// the data dir free, not still locked by the one stopping.
func TestSignalStopHoldsTheStartLock(t *testing.T) {
	dir := t.TempDir()
	f := NewFactory(config{DataDir: dir, Namespace: "default", Sandbox: "bwrap", uiPort: devserver.NoUI},
		IOStreams{Out: io.Discard, ErrOut: io.Discard})
	defer f.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	lock, err := devserver.LockStart(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- f.serve(ctx, lock, 0, false, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-served:
		testenv.RequireService(t, "local server with a bwrap sandbox", err)
		t.Fatal("serve returned before it was ready")
	}
	stop()
	for {
		if _, err := devserver.ReadAddress(dir); errors.Is(err, devserver.ErrNotRunning) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	next, err := devserver.LockStart(cctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	srv, err := devserver.Start(cctx, devserver.Options{DataDir: dir, UIPort: devserver.NoUI})
	if err != nil {
		t.Fatalf("a server started once the address file was gone: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Error(err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}
