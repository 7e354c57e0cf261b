package starter

import (
	"context"
	"io"
	"testing"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/sandbox"
)

// TestNoForwarderNoInstalls: a worker whose sandbox has no egress
// forwarder (the default outside the worker image) starts no proxy and
// installs nothing, so a project's manifest never fails its checks with
// a run that could not reach the network anyway.
func TestNoForwarderNoInstalls(t *testing.T) {
	f := NewFactory(config{DataDir: t.TempDir(), Namespace: "default", Sandbox: "bwrap", uiPort: devserver.NoUI},
		IOStreams{Out: io.Discard, ErrOut: io.Discard})
	defer f.Close()
	acts, stop, err := f.Activities(context.Background(), sandbox.Config{Backend: "bwrap", PoolSize: -1})
	if err != nil {
		testenv.RequireService(t, "a worker with a bwrap sandbox", err)
	}
	defer stop()
	if acts.Egress != nil {
		t.Errorf("a worker without a forwarder routes installs through a proxy no sandbox can reach")
	}
}
