package starter

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/devserver"
)

// TestSetupNamespaceCommand runs `temporal setup-namespace` against a real
// Temporal frontend: the first run creates the namespace with the
// workflow's search attributes, the second finds it; local mode and an
// unreachable frontend are refused with what to do.
func TestSetupNamespaceCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: t.TempDir(), UIPort: devserver.NoUI})
	if err != nil {
		t.Fatalf("start temporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	setup := func(cfg config, args ...string) cliRun {
		var out, errOut bytes.Buffer
		cfg.DataDir = t.TempDir()
		f := NewFactory(cfg, IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		t.Cleanup(f.Close)
		code := execute(ctx, f, append([]string{"temporal", "setup-namespace"}, args...))
		return cliRun{code: code, out: out.String(), errOut: errOut.String()}
	}
	cluster := config{TemporalAddress: srv.FrontendAddress(), Namespace: "team", addressSet: true}

	setup(cluster, "--retention", "48h").want(t, exitOK,
		[]string{"namespace team at " + srv.FrontendAddress() + ": created, keeping finished tasks 48h0m0s",
			"AutocoderCostUSD, AutocoderIteration, AutocoderLanguage, AutocoderPhase"}, nil)
	setup(cluster).want(t, exitOK, []string{"namespace team at " + srv.FrontendAddress() + ": exists"}, nil)

	setup(config{Namespace: "team"}).want(t, exitUsage, nil, []string{"temporal.address is not set", "TEMPORAL_ADDRESS"})
	setup(config{TemporalAddress: "127.0.0.1:1", Namespace: "team", addressSet: true}, "--timeout", "2s").want(t, exitUnavailable,
		nil, []string{"set up namespace team at 127.0.0.1:1", "check that Temporal runs there"})
}
