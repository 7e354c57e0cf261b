package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
)

// outageDelays keep a first model turn running long enough for an outage to
// land inside it.
var outageDelays = delays{plan: 300 * time.Millisecond, generate: 2 * time.Second, retry: time.Second}

// runThroughOutage starts task n, waits until its first model turn is
// running on the worker, calls outage, and waits for the task to finish.
func runThroughOutage(ctx context.Context, t *testing.T, c client.Client, w *testenv.Worker, prefix string, n int, outage func()) string {
	t.Helper()
	id, err := startTask(ctx, c, prefix, n, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	for {
		types, err := pendingStarted(ctx, c, id, w.Started)
		if err != nil {
			t.Fatal(err)
		}
		if len(types) > 0 && types[0] == "ModelTurn" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("task %s never started a model turn", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	outage()
	back := time.Now()
	res, err := waitDone(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 2 {
		t.Errorf("task %s took %d iterations, want 2", id, res.Iterations)
	}
	t.Logf("task %s finished %s after the outage ended", id, time.Since(back).Round(time.Millisecond))
	return res.SnapshotID
}

// TestTemporalServerRestart stops the file-backed embedded Temporal server
// while a task waits for a model turn and starts it again on the same data dir and
// port; the worker process reconnects and the task finishes.
func TestTemporalServerRestart(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := testenv.Binary(t)

	opts := devserver.Options{DataDir: t.TempDir(), FrontendPort: testenv.FreePort(t), UIPort: devserver.NoUI,
		Logger: slog.New(slog.DiscardHandler)}
	srv, c := startTemporal(ctx, t, opts)

	model := newModelServer(t, taskScript(true, outageDelays))
	dataDir := t.TempDir()
	workers := testenv.NewFleet(t, bin, workerEnv(srv.FrontendAddress(), srv.Namespace(), dataDir, model.URL()),
		"--sandbox-slots", "2", "--sandbox-pool", "1")
	w := workers.Start()

	snap := runThroughOutage(ctx, t, c, w, "chaos-temporal", 1, func() {
		if err := srv.Stop(); err != nil {
			t.Fatalf("stop temporal: %v", err)
		}
		time.Sleep(2 * time.Second)
		restarted, err := devserver.Start(ctx, opts)
		if err != nil {
			t.Fatalf("restart temporal on the same data dir and port: %v", err)
		}
		t.Cleanup(func() { _ = restarted.Stop() })
	})
	if w.Exited() {
		t.Errorf("the worker exited while Temporal was down: %v", w.Err())
	}
	if err := w.Stop(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "autocoder.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	if err := checkSnapshot(ctx, st, 1, snap); err != nil {
		t.Error(err)
	}
}

// TestPostgresRestart points the worker's store at a fresh database and
// stops PostgreSQL (pg_ctl stop -m fast) while a task waits for a model turn, until
// the model has answered; the task finishes with its files in that database.
//
// The cluster is private to the test, so restarting it cannot disturb
// other tests that share the cluster of scripts/postgres.sh.
func TestPostgresRestart(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := testenv.Binary(t)
	pg := startPostgres(ctx, t)
	url, err := pg.createDatabase(ctx, "chaos_"+randomHex(4))
	if err != nil {
		t.Fatal(err)
	}

	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	// The first answer after the plan is held until PostgreSQL is down, so
	// the memo and transcript writes that follow it meet the outage.
	release := make(chan struct{})
	var held atomic.Bool
	script := taskScript(true, outageDelays)
	model := newModelServer(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if !strings.Contains(req.LastUser(), planMarker) && held.CompareAndSwap(false, true) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return script(req)
	})
	workers := testenv.NewFleet(t, bin, workerEnv(ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), t.TempDir(), model.URL(),
		"AUTOCODER_DATABASE_URL="+url), "--sandbox-slots", "2", "--sandbox-pool", "1")
	w := workers.Start()

	snap := runThroughOutage(ctx, t, c, w, "chaos-postgres", 1, func() {
		start := time.Now()
		if err := pg.ctl("stop", "-m", "fast", "-w", "-t", "60"); err != nil {
			t.Fatalf("stop postgres: %v", err)
		}
		close(release)
		for !answeredAfter(model, start) {
			if ctx.Err() != nil {
				t.Fatal("the held model turn was never answered")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := pg.ctl("start", "-w", "-t", "60", "-l", pg.logFile()); err != nil {
			t.Fatalf("start postgres: %v", err)
		}
		t.Logf("postgres was down for %s, across the model's answer", time.Since(start).Round(time.Millisecond))
	})
	if err := w.Stop(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	st, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	if err := checkSnapshot(ctx, st, 1, snap); err != nil {
		t.Error(err)
	}
}

// answeredAfter reports whether the model finished a call after t. A call
// the client closed right after reading the end of the stream may count as
// cut; it was answered all the same, and even a truly cut one only means a
// retry, which meets the outage too.
func answeredAfter(m *llmtest.TimedServer, t time.Time) bool {
	for _, c := range m.Calls() {
		if c.End.After(t) {
			return true
		}
	}
	return false
}

// pgCluster is a throwaway PostgreSQL cluster in a temp dir.
type pgCluster struct {
	bin, data string
	port      int
}

// startPostgres initialises and starts a cluster owned by the postgres
// user when running as root (initdb refuses root), else by the caller.
func startPostgres(ctx context.Context, t *testing.T) *pgCluster {
	t.Helper()
	bin := os.Getenv("AUTOCODER_PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	_, err := os.Stat(filepath.Join(bin, "pg_ctl"))
	testenv.RequireService(t, "PostgreSQL binaries (AUTOCODER_PG_BIN)", err)

	base, err := os.MkdirTemp("", "autocoder-chaos-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	p := &pgCluster{bin: bin, data: filepath.Join(base, "data"), port: testenv.FreePort(t)}
	if err := p.prepareDir(base); err != nil {
		t.Fatal(err)
	}
	if err := p.run(ctx, "initdb", "-D", p.data, "-U", "postgres", "-E", "UTF8", "--auth=trust", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v", err)
	}
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n", p.port, p.data)
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatalf("configure postgres: %v", err)
	}
	if err := p.ctl("start", "-w", "-t", "60", "-l", p.logFile()); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() { _ = p.ctl("stop", "-m", "immediate") })
	return p
}

// prepareDir lets the cluster owner reach and own the data dir.
func (p *pgCluster) prepareDir(base string) error {
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(p.data, 0o700); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(p.data, uid, gid)
}

// logFile takes the server's output: without it a server started by
// pg_ctl would hold the caller's output pipe open.
func (p *pgCluster) logFile() string { return filepath.Join(p.data, "server.log") }

// run runs a PostgreSQL program as the cluster owner.
func (p *pgCluster) run(ctx context.Context, prog string, args ...string) error {
	argv := append([]string{filepath.Join(p.bin, prog)}, args...)
	if os.Geteuid() == 0 {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", prog, err, out)
	}
	return nil
}

func (p *pgCluster) ctl(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return p.run(ctx, "pg_ctl", append(args, "-D", p.data)...)
}

// createDatabase makes an empty database and returns its URL.
func (p *pgCluster) createDatabase(ctx context.Context, name string) (string, error) {
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, name), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
