package node

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
	sb "github.com/autocoder/autocoder/sandbox"
)

// TestImageNodeStartsFromASnapshot: the image's node is a build with V8's
// startup snapshot, the registry's or, in the offline image, the host's
// when it has one (Debian's, built without, starts each process 3-4 times
// slower), and Debian's jest runs on it there (TestJestStyle).
func TestImageNodeStartsFromASnapshot(t *testing.T) {
	r := langtest.Runner(t, "docker", JavaScript())
	res, _ := langtest.Run(t, r, sb.Spec{Profile: "javascript", Cmd: []string{"sh", "-c",
		"node -p process.config.variables.node_use_node_snapshot; if [ -x /usr/bin/node ]; then echo offline; fi"}})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	out := strings.Fields(res.Stdout)
	if len(out) == 2 && hostNode() == "" {
		t.Skip("an offline image on a host without Node 20 built with the snapshot keeps Debian's node")
	}
	if len(out) == 0 || out[0] != "true" {
		t.Errorf("the image's node has no startup snapshot: %q (host's node: %q)", res.Stdout, hostNode())
	}
}
