package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/taskclient"
)

// TestClientUsesTheWorkersStore: a client of a cluster whose store is not
// the workers' stops before it uploads a project or starts a task, and
// says what to set; with the workers' store, the same command starts the
// task.
func TestClientUsesTheWorkersStore(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pythonScenario.script())
	waitForWorkerStores(t, c)
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "calc.py"), []byte("def add(a, b):\n    return a - b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--detach", "--json", "--dir", project, "--test-cmd", "python3 -c 'import calc; assert calc.add(2, 2) == 4'", "fix add"}

	ownStore := t.TempDir()
	c.env = append(slices.Clone(c.env), "AUTOCODER_DATA_DIR="+ownStore)
	out, errOut, code := c.cli(args...)
	if code == 0 || !strings.Contains(errOut, "read another store than this client's (SQLite at "+ownStore) ||
		!strings.Contains(errOut, "AUTOCODER_DATABASE_URL") {
		t.Fatalf("run with a store of its own: exit %d\nstdout:\n%s\nstderr:\n%s\nwant an error naming the store and what to set", code, out, errOut)
	}
	if strings.Contains(errOut, "uploaded") {
		t.Errorf("the project was uploaded before the check:\n%s", errOut)
	}
	c.env = c.env[:len(c.env)-1]
	if tasks := c.mustCLI("list"); strings.Contains(tasks, "autocoder-") {
		t.Fatalf("a task was started:\n%s", tasks)
	}

	id := c.start(args[3:]...)
	if st := c.status(id); st.InputSnapshot == "" {
		t.Errorf("task %s started from no project: %+v", id, st)
	}
}

// waitForWorkerStores waits until the server lists a worker of the
// cluster, with its store, among the task queue's pollers.
func waitForWorkerStores(t *testing.T, c *cluster) {
	t.Helper()
	tc := taskclient.New(c.ts.GetDefaultClient(), c.ts.GetDefaultNamespace())
	deadline := time.Now().Add(time.Minute)
	for {
		stores, _, err := tc.WorkerStores(context.Background())
		if err == nil && len(stores) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker with a store among the pollers after a minute: %v, %v", stores, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
