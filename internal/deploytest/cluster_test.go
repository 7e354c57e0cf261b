package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// composeE2E turns on the tests that start the whole compose cluster.
const composeE2E = "AUTOCODER_COMPOSE_E2E"

// requireComposeE2E skips unless asked for: the cluster takes minutes to
// start, and the first run builds every image.
func requireComposeE2E(t *testing.T) {
	t.Helper()
	if os.Getenv(composeE2E) != "1" {
		t.Skipf("starts the compose cluster for minutes; set %s=1", composeE2E)
	}
	needDocker(t)
	needTool(t, "docker-compose")
	needTool(t, "bash")
}

// composeCluster is docker-compose.yml running as a project of its own,
// with a scripted model the workers reach on the Docker bridge, and the
// built CLI pointed at its Temporal.
type composeCluster struct {
	t       *testing.T
	project string
	env     []string // of docker-compose
	envFile string   // empty: no .env of the checkout applies
	cliEnv  []string // of the autocoder CLI
	bin     string
	model   *llmtest.TimedServer
	// index serves greetlib, which depsTask's tests import, on the
	// docker bridge; the workers' installs reach it through their egress
	// proxy.
	index *registrytest.PyIndex
}

// ensureImages builds every image the compose file runs by default: when
// missing, the Temporal images and Postgres (deploy/build-temporal-images.sh)
// and the Python sandbox image (scripts/build-images.sh); each time, the
// worker image (deploy/build-base-images.sh --app). It returns how long that
// took.
func ensureImages(ctx context.Context, t *testing.T) time.Duration {
	t.Helper()
	root := repoRoot(t)
	start := time.Now()
	env := os.Environ()
	mustRun(ctx, t, env, root, "bash", "deploy/build-temporal-images.sh")
	// Always: the worker image is the code under test. The programs are
	// compiled on the host, so with its build cache this takes seconds.
	mustRun(ctx, t, append(env, "AUTOCODER_APP_IMAGE="+appImage), root, "bash", "deploy/build-base-images.sh", "--app")
	if r := run(ctx, t, env, root, "docker", "image", "inspect", "autocoder/sandbox-python:2"); r.code != 0 {
		mustRun(ctx, t, env, root, "bash", "scripts/build-images.sh")
	}
	return time.Since(start)
}

// startCompose brings the cluster up with the given number of workers and
// waits until every worker reports ready. Cleanup takes it down with its
// volumes and checks that nothing of the project is left.
func startCompose(ctx context.Context, t *testing.T, script llmtest.Script, workers int) *composeCluster {
	t.Helper()
	gateway := bridgeGateway(ctx, t)
	model := newModelServer(t, gateway, script)
	wheel, whl := greetlib(t)
	index := registrytest.NewPyIndexOn(t, listen(t, gateway), map[string][]byte{wheel: whl})
	fi, err := os.Stat("/var/run/docker.sock")
	if err != nil {
		t.Fatalf("docker socket: %v", err)
	}
	gid := int(fi.Sys().(*syscall.Stat_t).Gid)
	temporalPort, postgresPort := testenv.FreePort(t), testenv.FreePort(t)
	c := &composeCluster{
		t:       t,
		project: fmt.Sprintf("autocoder-e2e-%d", os.Getpid()),
		bin:     testenv.Binary(t),
		model:   model,
		index:   index,
	}
	c.envFile = filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(c.envFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"POSTGRES_PASSWORD=e2e-temporal", "AUTOCODER_DB_PASSWORD=e2e-autocoder",
		"DOCKER_GID=" + strconv.Itoa(gid),
		"AUTOCODER_MODEL=openai:gpt-4.1-mini", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=" + model.URL(),
		"TEMPORAL_PUBLISH=127.0.0.1:" + strconv.Itoa(temporalPort),
		"TEMPORAL_UI_PUBLISH=127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
		"POSTGRES_PUBLISH=127.0.0.1:" + strconv.Itoa(postgresPort),
		"WORKER_STOP_GRACE=20s",
		"AUTOCODER_SHARED_DIR=" + t.TempDir(),
		"AUTOCODER_REGISTRY_INDEXES=python=" + index.URL(),
		"AUTOCODER_PRIVATE_REGISTRIES=" + index.Host(),
	}
	// A client as deploy/README.md's "Clients" has it: Temporal and the
	// workers' store, both as published.
	c.cliEnv = testenv.CleanEnv("TEMPORAL_ADDRESS=127.0.0.1:"+strconv.Itoa(temporalPort), "TEMPORAL_NAMESPACE=default",
		"AUTOCODER_DATA_DIR="+t.TempDir(), "AUTOCODER_MODEL=openai:gpt-4.1-mini",
		"AUTOCODER_DATABASE_URL=postgres://autocoder@127.0.0.1:"+strconv.Itoa(postgresPort)+"/autocoder?sslmode=disable",
		"PGPASSWORD=e2e-autocoder")

	t.Cleanup(func() { c.down() })
	c.compose(ctx, "up", "-d", "--no-build", "--scale", "worker="+strconv.Itoa(workers))
	c.waitHealthy(ctx, workers)
	return c
}

// compose runs docker-compose on the project and fails the test on an error.
func (c *composeCluster) compose(ctx context.Context, args ...string) result {
	c.t.Helper()
	root := repoRoot(c.t)
	full := append([]string{"-p", c.project, "-f", filepath.Join(root, "docker-compose.yml"), "--env-file", c.envFile}, args...)
	return mustRun(ctx, c.t, c.env, root, "docker-compose", full...)
}

// workers lists the worker containers by id.
func (c *composeCluster) workers(ctx context.Context) []string {
	c.t.Helper()
	return strings.Fields(mustRun(ctx, c.t, nil, "", "docker", "ps", "-q", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+c.project,
		"--filter", "label=com.docker.compose.service=worker").stdout)
}

// waitHealthy waits until n worker containers report healthy: their
// /readyz found Temporal, the store and the sandbox usable.
func (c *composeCluster) waitHealthy(ctx context.Context, n int) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ids := c.workers(ctx)
		healthy := 0
		for _, id := range ids {
			r := run(ctx, c.t, nil, "", "docker", "inspect", "-f", "{{.State.Health.Status}}", id)
			if strings.TrimSpace(r.stdout) == "healthy" {
				healthy++
			}
		}
		if healthy == n {
			return
		}
		if time.Now().After(deadline) {
			logs := c.compose(ctx, "logs", "--tail", "40")
			c.t.Fatalf("%d of %d workers healthy after 5 minutes\n%s", healthy, n, tail(logs.stdout))
		}
		time.Sleep(2 * time.Second)
	}
}

// down removes the project with its volumes and checks that no container,
// volume or network of it, nor a sandbox container of its workers, is left.
func (c *composeCluster) down() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hosts := map[string]bool{}
	for _, id := range c.workers(ctx) {
		hosts[id[:12]] = true
	}
	start := time.Now()
	c.compose(ctx, "down", "-v", "--remove-orphans")
	c.t.Logf("docker-compose down -v: %s", time.Since(start).Round(time.Second))
	label := "label=com.docker.compose.project=" + c.project
	for _, what := range [][]string{
		{"ps", "-aq", "--filter", label},
		{"volume", "ls", "-q", "--filter", label},
		{"network", "ls", "-q", "--filter", label},
	} {
		if out := strings.TrimSpace(mustRun(ctx, c.t, nil, "", "docker", what...).stdout); out != "" {
			c.t.Errorf("left after down -v (docker %s): %s", strings.Join(what, " "), out)
		}
	}
	// Sandbox containers name their worker's host, the container's id.
	out := mustRun(ctx, c.t, nil, "", "docker", "ps", "-a", "--filter", "label=autocoder.sandbox=1",
		"--format", `{{.ID}} {{.Label "autocoder.sandbox.owner"}}`).stdout
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id, owner, _ := strings.Cut(line, " ")
		if host, _, _ := strings.Cut(owner, "/"); hosts[host] {
			c.t.Errorf("sandbox container %s of worker %s left after down", id, host)
		}
	}
}

// cli runs the built binary against the cluster's Temporal.
func (c *composeCluster) cli(ctx context.Context, args ...string) string {
	c.t.Helper()
	return mustRun(ctx, c.t, c.cliEnv, "", c.bin, args...).stdout
}

// start starts a Python task through the CLI and returns its id; args
// come before the task.
func (c *composeCluster) start(ctx context.Context, task string, args ...string) string {
	c.t.Helper()
	var res struct{ ID string }
	out := c.cli(ctx, append(append([]string{"run", "--detach", "--json", "--lang", "python"}, args...), task)...)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
		c.t.Fatalf("run --detach --json printed %q: %v", out, err)
	}
	return res.ID
}

func (c *composeCluster) status(ctx context.Context, id string) workflows.Status {
	c.t.Helper()
	var st workflows.Status
	out := c.cli(ctx, "status", id, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("decode status: %v\n%s", err, out)
	}
	return st
}

// waitDone polls a task's status until it has ended.
func (c *composeCluster) waitDone(ctx context.Context, id string) workflows.Status {
	c.t.Helper()
	for {
		st := c.status(ctx, id)
		if st.Phase.Done() {
			return st
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("task %s still %s: %v", id, st.Phase, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

var taskNumberRE = regexp.MustCompile(`Compose task (\d+):`)

// newModelServer serves a script on an address of this machine the
// workers' containers reach, and records every call with its task number.
func newModelServer(t *testing.T, host string, script llmtest.Script) *llmtest.TimedServer {
	t.Helper()
	return llmtest.NewTimed(t, listen(t, host), taskNumberRE, script)
}

// bridgeGateway is this machine's address on docker's default bridge,
// which containers of every network reach: the network's configured
// gateway, else the first IPv4 address of its interface (a daemon whose
// IPAM config names only the subnet).
func bridgeGateway(ctx context.Context, t *testing.T) string {
	t.Helper()
	out := strings.Fields(mustRun(ctx, t, nil, "", "docker", "network", "inspect", "bridge", "-f",
		`{{range .IPAM.Config}}{{.Gateway}} {{end}}|{{index .Options "com.docker.network.bridge.name"}}`).stdout)
	name := "docker0"
	for _, f := range out {
		if gw, iface, ok := strings.Cut(f, "|"); ok {
			if iface != "" {
				name = iface
			}
			f = gw
		}
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return f
		}
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("docker's default bridge: no gateway configured and no interface %s: %v", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatalf("docker's default bridge %s has no IPv4 address", name)
	return ""
}

// listen listens on a free port of host, an address of this machine.
func listen(t *testing.T, host string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on the docker bridge %s: %v", host, err)
	}
	return ln
}

// greetlib is the wheel depsTask installs.
func greetlib(t *testing.T) (string, []byte) {
	return registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
}

// depsTask is the task whose project needs a package from the index.
const depsTask = 3

// isPlan says whether a call asked for the plan, not an attempt's turn.
func isPlan(c llmtest.TimedCall) bool { return bytes.Contains(c.Body, []byte(planMarker)) }

// planMarker is in the plan prompt (activities/prompts.go).
const planMarker = "Write a short plan"

// composeTask is the text of task n; the number routes the scripted
// answers and names the files.
func composeTask(n int) string {
	return fmt.Sprintf("Compose task %d: write a function add(a, b) in calc_%d.py that returns the sum, with pytest tests.", n, n)
}

// addScript answers the plan and the one turn of each numbered task with
// fenced files whose tests pass; a turn waits turnDelay before answering.
func addScript(turnDelay func(task int) time.Duration) llmtest.Script {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		var n int
		for _, msg := range req.Messages {
			if sub := taskNumberRE.FindStringSubmatch(msg.Content); msg.Role == "user" && sub != nil {
				n, _ = strconv.Atoi(sub[1])
				break
			}
		}
		if n == 0 {
			return llmtest.Reply{Status: http.StatusBadRequest, Content: "no compose task number in the prompt"}
		}
		calc, test := fmt.Sprintf("calc_%d.py", n), fmt.Sprintf("test_calc_%d.py", n)
		if strings.Contains(req.LastUser(), planMarker) {
			return llmtest.Reply{Content: fmt.Sprintf("1. Implement add in %s with pytest tests in %s.", calc, test)}
		}
		files := fmt.Sprintf(
			"```path=%s\ndef add(a, b):\n    return a + b\n```\n```path=%s\nfrom calc_%d import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n```\n",
			calc, test, n)
		if n == depsTask {
			files += "```path=requirements.txt\ngreetlib==1.0\n```\n```path=test_greet.py\nimport greetlib\n\n\ndef test_greet():\n    assert greetlib.hello() == 'hello from greetlib'\n```\n"
		}
		return llmtest.Reply{Delay: turnDelay(n), Content: files}
	}
}

// TestComposeEndToEnd starts docker-compose.yml with two workers, starts
// tasks through the CLI, kills the worker container running one of them
// while its model call is in flight, and checks that the task completes on
// the other worker, that no model prompt was paid for twice except the one
// the kill cut, and that `docker-compose down -v` leaves nothing behind.
//
//	AUTOCODER_COMPOSE_E2E=1 go test ./internal/deploytest/ -run TestComposeEndToEnd -v -timeout 60m
func TestComposeEndToEnd(t *testing.T) {
	requireComposeE2E(t)
	ctx := testContext(t, 55*time.Minute)
	built := ensureImages(ctx, t)
	t.Logf("images ready in %s", built.Round(time.Second))

	const victim = 1
	// The victim's turn takes long enough for the kill to land in it.
	script := addScript(func(n int) time.Duration {
		if n == victim {
			return 8 * time.Second
		}
		return 0
	})
	start := time.Now()
	c := startCompose(ctx, t, script, 2)
	t.Logf("docker-compose up, 2 workers ready: %s", time.Since(start).Round(time.Second))

	project := c.clientChecksStore(ctx)
	start = time.Now()
	other := c.start(ctx, composeTask(2), "--dir", project)
	deps := c.start(ctx, composeTask(depsTask))
	id := c.start(ctx, composeTask(victim))

	// Wait for the victim's turn to reach the model, then kill the worker
	// container that runs it.
	if _, err := c.model.Await(ctx, func(call llmtest.TimedCall) bool { return call.Task == victim && !isPlan(call) }); err != nil {
		t.Fatalf("task %s's turn never reached the model: %v", id, err)
	}
	tc := c.tasks(ctx)
	killed := c.workerOf(ctx, tc, id)
	survivor := ""
	for _, w := range c.workers(ctx) {
		if w != killed {
			survivor = w
		}
	}
	if survivor == "" {
		t.Fatalf("no second worker beside %s: %v", killed, c.workers(ctx))
	}
	killedAt := time.Now()
	mustRun(ctx, t, nil, "", "docker", "kill", killed)
	t.Logf("killed worker %.12s during task %s's model turn", killed, id)

	for _, tid := range []string{id, other, deps} {
		if st := c.waitDone(ctx, tid); st.Phase != workflows.PhaseSucceeded {
			t.Errorf("task %s ended %s: %s", tid, st.Phase, st.Error)
		}
	}
	t.Logf("the tasks done %s after the first start", time.Since(start).Round(time.Second))
	// The project uploaded from the client came back from the store the
	// workers wrote, fixed.
	c.cli(ctx, "export", other, project)
	if b, err := os.ReadFile(filepath.Join(project, "calc_2.py")); err != nil || !strings.Contains(string(b), "return a + b") {
		t.Errorf("task %s's project after export: calc_2.py = %q, %v; want the fix", other, b, err)
	}
	// Its tests import greetlib: a worker in a container installed it
	// through its egress proxy, from the shared directory.
	if n := c.index.Downloads(); n == 0 {
		t.Errorf("task %s: the index handed out no wheel", deps)
	}

	// The killed container stays down: what ran after the kill ran on the
	// survivor.
	if state := strings.TrimSpace(mustRun(ctx, t, nil, "", "docker", "inspect", "-f", "{{.State.Running}}", killed).stdout); state != "false" {
		t.Errorf("the killed worker is running again (%s); the task may have finished there", state)
	}
	checkPaidOnce(t, c.model.Calls(), killedAt)

	// Every activity of the victim that started after the kill started on
	// the survivor.
	events, err := tc.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	after := 0
	for _, ev := range events {
		if ev.GetEventType() != enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED || ev.GetEventTime().AsTime().Before(killedAt) {
			continue
		}
		after++
		if host := workerHost(ev.GetActivityTaskStartedEventAttributes().GetIdentity()); host != survivor[:12] {
			t.Errorf("activity event %d after the kill ran on %q, want the survivor %.12s", ev.GetEventId(), host, survivor)
		}
	}
	if after == 0 {
		t.Error("no activity of the task started after the kill")
	}
	c.adversarialOnWorker(ctx, survivor)
}

// clientChecksStore makes a project with a bug for task 2 and checks that
// a client with a store of its own (its SQLite file, no database URL) is
// stopped before it uploads the project, with what to set; it returns the
// project's directory.
func (c *composeCluster) clientChecksStore(ctx context.Context) string {
	c.t.Helper()
	project := c.t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "calc_2.py"), []byte("def add(a, b):\n    return a - b\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	// The workers name their store when they poll.
	tc := c.tasks(ctx)
	for {
		if stores, _, err := tc.WorkerStores(ctx); err == nil && len(stores) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("no worker named its store: %v", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	var own []string
	for _, kv := range c.cliEnv {
		if !strings.HasPrefix(kv, "AUTOCODER_DATABASE_URL=") {
			own = append(own, kv)
		}
	}
	r := run(ctx, c.t, own, "", c.bin, "run", "--detach", "--lang", "python", "--dir", project, composeTask(2))
	if r.code == 0 || !strings.Contains(r.stderr, "read another store than this client's") || strings.Contains(r.stderr, "uploaded") {
		c.t.Fatalf("a client with a store of its own: exit %d\nstdout: %s\nstderr: %s\nwant it stopped before the upload", r.code, r.stdout, r.stderr)
	}
	return project
}

// adversarialOnWorker runs the sandbox package's hostile programs
// (TestAdversarial, docker backend) inside a worker container, as the
// worker's user with the worker's environment: the sandboxes it starts
// through the host's Docker socket must contain them as they do for a
// worker on the host. The programs' processes live on the host, where
// this test looks for any left behind.
func (c *composeCluster) adversarialOnWorker(ctx context.Context, worker string) {
	t := c.t
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandbox.test")
	mustRun(ctx, t, append(os.Environ(), "CGO_ENABLED=0"), repoRoot(t), "go", "test", "-c", "-o", bin, "./sandbox")
	mustRun(ctx, t, nil, "", "docker", "cp", bin, worker+":/tmp/sandbox.test")
	start := time.Now()
	r := run(ctx, t, nil, "", "docker", "exec", "-e", "CI=true", worker,
		"/tmp/sandbox.test", "-test.run", "^TestAdversarial$/^docker$", "-test.v", "-test.count=1", "-test.timeout=15m")
	passed := strings.Count(r.stdout, "--- PASS: TestAdversarial/docker/")
	if r.code != 0 || passed == 0 || strings.Contains(r.stdout, "--- SKIP") {
		t.Errorf("the hostile programs on worker %.12s: exit %d, %d cases passed\n%s%s", worker, r.code, passed, tail(r.stdout), tail(r.stderr))
		return
	}
	t.Logf("the hostile programs on worker %.12s: %d cases passed in %s", worker, passed, time.Since(start).Round(time.Second))
	if left := strings.TrimSpace(run(ctx, t, nil, "", "pgrep", "-af", "sleep.731[0-9]").stdout); left != "" {
		t.Errorf("processes of the hostile programs left on the host:\n%s", left)
	}
}

// tasks dials the cluster's Temporal from this test.
func (c *composeCluster) tasks(ctx context.Context) *taskclient.Client {
	c.t.Helper()
	var addr string
	for _, kv := range c.cliEnv {
		if v, ok := strings.CutPrefix(kv, "TEMPORAL_ADDRESS="); ok {
			addr = v
		}
	}
	sdk, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: "default"})
	if err != nil {
		c.t.Fatalf("dial temporal at %s: %v", addr, err)
	}
	c.t.Cleanup(sdk.Close)
	return taskclient.New(sdk, "default")
}

// workerOf returns the id of the worker container running one of the
// task's activities: the SDK names a worker "pid@hostname@", and a
// container's host name is the start of its id.
func (c *composeCluster) workerOf(ctx context.Context, tc *taskclient.Client, id string) string {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		d, err := tc.Describe(ctx, id)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
				continue
			}
			host := workerHost(pa.GetLastWorkerIdentity())
			for _, w := range c.workers(ctx) {
				if w[:12] == host {
					return w
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("no worker container runs an activity of task %s", id)
	return ""
}

// workerHost is the host part of a worker identity ("pid@host@...").
func workerHost(identity string) string {
	_, rest, _ := strings.Cut(identity, "@")
	host, _, _ := strings.Cut(rest, "@")
	return host
}

// checkPaidOnce fails when a prompt was answered more than once, unless
// the first call was in flight at the kill: the worker died before it
// could record the answer, so the retry on the other worker asks again.
func checkPaidOnce(t *testing.T, calls []llmtest.TimedCall, killedAt time.Time) {
	t.Helper()
	seen := map[string]llmtest.TimedCall{}
	for _, call := range calls {
		first, again := seen[call.Prompt]
		if !again {
			seen[call.Prompt] = call
			continue
		}
		cutByKill := first.Start.Before(killedAt) && (first.End.IsZero() || first.End.After(killedAt))
		if !cutByKill {
			t.Errorf("task %d: prompt %s asked again at %s; the first call (%s–%s) was not in flight at the kill (%s)",
				call.Task, call.Prompt, call.Start.Format(time.TimeOnly), first.Start.Format(time.TimeOnly),
				first.End.Format(time.TimeOnly), killedAt.Format(time.TimeOnly))
		}
	}
}

// TestComposeThroughput runs the same twenty short tasks (each model call
// answered after 200 ms) on one worker of the compose cluster, then on two,
// and reports the ratio of the wall times. It measures; it asserts only
// that every task succeeded.
//
//	AUTOCODER_COMPOSE_E2E=1 go test ./internal/deploytest/ -run TestComposeThroughput -v -timeout 60m
func TestComposeThroughput(t *testing.T) {
	requireComposeE2E(t)
	ctx := testContext(t, 55*time.Minute)
	ensureImages(ctx, t)
	const tasks = 20
	script := addScript(func(int) time.Duration { return 200 * time.Millisecond })
	c := startCompose(ctx, t, llmtest.Script(func(req llmtest.ChatRequest) llmtest.Reply {
		r := script(req)
		r.Delay = 200 * time.Millisecond
		return r
	}), 1)

	batch := func(first int) time.Duration {
		start := time.Now()
		var ids []string
		for n := first; n < first+tasks; n++ {
			ids = append(ids, c.start(ctx, composeTask(n)))
		}
		for _, id := range ids {
			if st := c.waitDone(ctx, id); st.Phase != workflows.PhaseSucceeded {
				t.Errorf("task %s ended %s: %s", id, st.Phase, st.Error)
			}
		}
		return time.Since(start)
	}
	one := batch(100)
	c.compose(ctx, "up", "-d", "--no-build", "--scale", "worker=2")
	c.waitHealthy(ctx, 2)
	two := batch(200)
	t.Logf("%d tasks: 1 worker %s, 2 workers %s; ratio 1/2 = %.2f",
		tasks, one.Round(time.Millisecond), two.Round(time.Millisecond), one.Seconds()/two.Seconds())
}
