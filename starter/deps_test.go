package starter

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/sandbox"
)

// workerActivities assembles a bwrap worker's activities with no
// sandbox.forwarder set, its executable the one exe gives, and returns
// whether installs go through the egress proxy and what the worker
// logged.
func workerActivities(t *testing.T, exe func() (string, error), env ...string) (routed bool, log string) {
	t.Helper()
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	f := NewFactory(config{DataDir: t.TempDir(), Namespace: "default", Sandbox: "bwrap", uiPort: devserver.NoUI},
		IOStreams{Out: io.Discard, ErrOut: io.Discard})
	defer f.Close()
	if len(env) > 0 {
		kv := map[string]string{}
		for i := 0; i+1 < len(env); i += 2 {
			kv[env[i]] = env[i+1]
		}
		f.cfg.settings = settingsFor(t, kv)
	}
	f.Executable = exe
	acts, stop, err := f.Activities(context.Background(), sandbox.Config{Backend: "bwrap", PoolSize: -1})
	if err != nil {
		testenv.RequireService(t, "a worker with a bwrap sandbox", err)
	}
	defer stop()
	return acts.Egress != nil, buf.String()
}

// TestWorkerIsItsOwnForwarder: a worker with no sandbox.forwarder set
// (every local worker by default) routes installs through its egress
// proxy, its own executable the sandboxes' forwarder, statically or
// dynamically linked (internal/e2e's TestLocalWorkerInstallsDeps installs
// through autocoder built both ways); one whose executable cannot serve
// (here a shell script) installs nothing, and its log says why and what
// to do.
func TestWorkerIsItsOwnForwarder(t *testing.T) {
	for _, cgo := range []bool{false, true} {
		bin := testenv.Forwarder(t, cgo)
		if routed, log := workerActivities(t, func() (string, error) { return bin, nil }); !routed {
			t.Errorf("a worker built with cgo=%v does not route installs:\n%s", cgo, log)
		}
	}
	script := filepath.Join(t.TempDir(), "autocoder")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	routed, log := workerActivities(t, func() (string, error) { return script, nil })
	if routed {
		t.Errorf("a worker whose executable is a script routes installs through a proxy no sandbox can reach")
	}
	if !strings.Contains(log, "dependency installs are off") || !strings.Contains(log, "sandbox.forwarder") || !strings.Contains(log, script) {
		t.Errorf("the worker's log does not say why installs are off:\n%s", log)
	}
}

// TestForwarderNoneTurnsInstallsOff: sandbox.forwarder = none is how a
// person turns dependency installs off.
func TestForwarderNoneTurnsInstallsOff(t *testing.T) {
	bin := testenv.Forwarder(t, false)
	routed, log := workerActivities(t, func() (string, error) { return bin, nil }, "AUTOCODER_SANDBOX_FORWARDER", "none")
	if routed || !strings.Contains(log, "sandbox.forwarder is none") {
		t.Errorf("installs routed with sandbox.forwarder = none (%v):\n%s", routed, log)
	}
}

// TestDepsHostEnv: the worker's installs of Go modules skip the checksum
// database for the private modules its go env names (GOPRIVATE, which
// GONOSUMDB defaults to), and only for those.
func TestDepsHostEnv(t *testing.T) {
	t.Setenv("GOENV", "off") // not this machine's go env file
	t.Setenv("GOPRIVATE", "corp.test,*.internal.test")
	t.Setenv("GONOSUMDB", "")
	if got := depsHostEnv(context.Background())["go"]["GONOSUMDB"]; got != "corp.test,*.internal.test" {
		t.Errorf("GONOSUMDB of Go installs: %q, want GOPRIVATE's", got)
	}
	t.Setenv("GOPRIVATE", "")
	if got, ok := depsHostEnv(context.Background())["go"]; ok {
		t.Errorf("with no private modules: %v, want nothing", got)
	}
}
