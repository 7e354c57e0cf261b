package sandbox

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/testenv"
)

// TestLocalDaemon: only a daemon on a unix socket of this machine can
// mount this host's files into a sandbox.
func TestLocalDaemon(t *testing.T) {
	for host, want := range map[string]bool{
		"":                            true,
		"unix:///var/run/docker.sock": true,
		"tcp://10.0.0.7:2376":         false,
		"ssh://builder@sandboxes":     false,
	} {
		t.Setenv("DOCKER_HOST", host)
		if got := LocalDaemon(); got != want {
			t.Errorf("DOCKER_HOST=%q: local %v, want %v", host, got, want)
		}
	}
}

// TestWarnsOfSlowStorage: a daemon whose storage driver looks paths up
// in user space is named in a warning with what avoids it; any other
// daemon gets none.
func TestWarnsOfSlowStorage(t *testing.T) {
	ctx := context.Background()
	cli, err := newDockerClient(ctx)
	if err != nil {
		testenv.RequireService(t, "docker", err)
	}
	defer cli.Close()
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	d := &dockerRunner{cli: cli, log: slog.New(slog.NewTextHandler(&log, nil))}
	d.warnSlowStorage(ctx)
	warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "bwrap backend") &&
		strings.Contains(log.String(), "driver="+info.Info.Driver)
	if want := lookupDrivers[info.Info.Driver]; warned != want {
		t.Errorf("driver %s: warned %v, want %v; log: %s", info.Info.Driver, warned, want, log.String())
	}
}
