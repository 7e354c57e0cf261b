package sandbox

import "testing"

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
