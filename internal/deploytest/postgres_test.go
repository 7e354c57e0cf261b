package deploytest

import (
	"github.com/autocoder/autocoder/internal/testenv"

	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/autocoder/autocoder/internal/store"
)

// postgresMajor is the one PostgreSQL major version of the deployment: the
// compose file's default image, the image deploy/build-temporal-images.sh
// builds from Debian bookworm, and the server these tests start.
const postgresMajor = "15"

// cluster is a throwaway PostgreSQL server of this test alone: the init
// script creates roles, which a shared test database may not allow.
type cluster struct {
	bin    string // directory of initdb, pg_ctl, psql
	dir    string // data directory and socket directory
	port   int
	asUser []string // prefix running a command as the cluster owner
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := os.Getenv("AUTOCODER_PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/" + postgresMajor + "/bin"
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		testenv.RequireService(t, "PostgreSQL binaries (AUTOCODER_PG_BIN)", err)
	}
	// Under /tmp itself, not t.TempDir: the cluster owner must be able to
	// reach it when the test runs as root.
	dir, err := os.MkdirTemp("", "autocoder-deploytest-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &cluster{bin: bin, dir: dir}
	// initdb refuses to run as root, so root hands the cluster to postgres.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			testenv.RequireService(t, "a postgres user to run the cluster as root", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	c.port = testenv.FreePort(t)
	ctx := testContext(t, 2*time.Minute)
	data := filepath.Join(dir, "data")
	c.mustRun(ctx, t, "initdb", "-D", data, "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8",
		"--auth-local=trust", "--auth-host=scram-sha-256")
	c.mustRun(ctx, t, "pg_ctl", "start", "-D", data, "-w", "-t", "60", "-l", filepath.Join(dir, "server.log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", c.port, dir))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.run(ctx, t, "pg_ctl", "stop", "-D", data, "-m", "immediate")
	})
	return c
}

func (c *cluster) command(name string, args ...string) (string, []string) {
	full := append(append([]string{}, c.asUser...), filepath.Join(c.bin, name))
	full = append(full, args...)
	return full[0], full[1:]
}

func (c *cluster) run(ctx context.Context, t *testing.T, name string, args ...string) result {
	t.Helper()
	bin, rest := c.command(name, args...)
	return run(ctx, t, os.Environ(), c.dir, bin, rest...)
}

func (c *cluster) mustRun(ctx context.Context, t *testing.T, name string, args ...string) {
	t.Helper()
	if r := c.run(ctx, t, name, args...); r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		t.Fatalf("%s: exit %d\n%s\n%s\nserver log:\n%s", name, r.code, tail(r.stdout), tail(r.stderr), tail(string(log)))
	}
}

// initScript runs deploy/postgres/initdb/10-autocoder.sh the way the
// postgres image does: as the cluster owner, with POSTGRES_USER and the
// variables docker-compose.yml passes.
func (c *cluster) initScript(ctx context.Context, t *testing.T, password string) result {
	t.Helper()
	script := filepath.Join(repoRoot(t), "deploy", "postgres", "initdb", "10-autocoder.sh")
	env := []string{
		"PATH=" + c.bin + ":" + os.Getenv("PATH"),
		"PGHOST=" + c.dir,
		"PGPORT=" + strconv.Itoa(c.port),
		"POSTGRES_USER=postgres",
		"AUTOCODER_DB_PASSWORD=" + password,
	}
	args := append(append([]string{}, c.asUser...), "env")
	args = append(append(args, env...), "bash", script)
	return run(ctx, t, os.Environ(), c.dir, args[0], args[1:]...)
}

func TestPostgresInitScript(t *testing.T) {
	needTool(t, "bash")
	c := startCluster(t)
	ctx := testContext(t, 3*time.Minute)
	// Quotes, a colon and a slash: the script must not build SQL or URLs by
	// pasting the password.
	const password = `it's "a" p@ss/w:rd`

	for _, step := range []struct {
		name     string
		password string
		wantCode bool // true: exit 0
		wantOut  string
	}{
		{"empty password", "", false, "AUTOCODER_DB_PASSWORD is empty"},
		{"first start", password, true, "database autocoder ready"},
		{"again", password, true, "database autocoder ready"},
	} {
		r := c.initScript(ctx, t, step.password)
		if (r.code == 0) != step.wantCode || !strings.Contains(r.stdout+r.stderr, step.wantOut) {
			t.Fatalf("%s: exit %d, want success %v and %q in\n%s%s", step.name, r.code, step.wantCode, step.wantOut, r.stdout, r.stderr)
		}
	}

	// The worker's settings from docker-compose.yml: a URL without a
	// password, and the password in PGPASSWORD.
	dbURL := fmt.Sprintf("postgres://autocoder@127.0.0.1:%d/autocoder?sslmode=disable", c.port)

	t.Setenv("PGPASSWORD", "wrong")
	if conn, err := pgx.Connect(ctx, dbURL); err == nil {
		conn.Close(ctx)
		t.Fatal("connected with a wrong password")
	}

	t.Setenv("PGPASSWORD", password)
	st, err := store.Open(ctx, store.Config{DatabaseURL: dbURL})
	if err != nil {
		t.Fatalf("open the store as the autocoder role (migrations): %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var super bool
	var owner string
	var trgm *string
	err = conn.QueryRow(ctx, `SELECT r.rolsuper, pg_get_userbyid(d.datdba),
		(SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm')
		FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()`).Scan(&super, &owner, &trgm)
	if err != nil {
		t.Fatal(err)
	}
	if super {
		t.Error("the autocoder role is a superuser")
	}
	if owner != "autocoder" {
		t.Errorf("database owner = %q, want autocoder", owner)
	}
	if trgm == nil {
		t.Error("pg_trgm is not installed in the autocoder database")
	}
}
