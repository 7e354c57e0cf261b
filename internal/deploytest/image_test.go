package deploytest

import (
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// appImage is the tag deploy/build-base-images.sh --app builds.
const appImage = "autocoder/autocoder:dev"

// TestWorkerImage builds the worker image from the Dockerfile on the
// registry-free base images and checks what a deployment relies on. The
// first build takes minutes; later ones reuse the base images and the
// host's build cache.
func TestWorkerImage(t *testing.T) {
	// A cold build compiles the whole binary static, a build the rest of
	// the tests share nothing with (minutes on two cores), so it runs on
	// demand, not in CI.
	if os.Getenv("AUTOCODER_DOCKER_BUILD_TEST") != "1" {
		t.Skip("builds images for many minutes; set AUTOCODER_DOCKER_BUILD_TEST=1")
	}
	needDocker(t)
	needTool(t, "bash")
	root := repoRoot(t)
	// A cold build (modules and a full compile) takes minutes on an idle
	// 2-core machine and far longer on a loaded one.
	ctx := testContext(t, 45*time.Minute)
	env := append(os.Environ(), "AUTOCODER_APP_IMAGE="+appImage)

	start := time.Now()
	mustRun(ctx, t, env, root, "bash", "deploy/build-base-images.sh", "--app")
	t.Logf("base images and %s built in %s", appImage, time.Since(start).Round(time.Second))

	t.Run("config", func(t *testing.T) {
		out := mustRun(ctx, t, nil, root, "docker", "image", "inspect", "-f", "{{json .Config}}", appImage).stdout
		var cfg struct {
			User       string
			Entrypoint []string
			Cmd        []string
		}
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("parse image config: %v\n%s", err, out)
		}
		if cfg.User == "" || strings.HasPrefix(cfg.User, "0") || strings.HasPrefix(cfg.User, "root") {
			t.Errorf("image user = %q, want a non-root user", cfg.User)
		}
		if !slices.Equal(cfg.Entrypoint, []string{"autocoder"}) || !slices.Equal(cfg.Cmd, []string{"worker"}) {
			t.Errorf("entrypoint %q cmd %q, want [autocoder] [worker]", cfg.Entrypoint, cfg.Cmd)
		}
	})

	// Each case runs a container and checks its exit code and output.
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string // substrings of stdout+stderr
		reject   []string
	}{
		{name: "help", args: []string{appImage, "--help"}, want: []string{"worker", "run", "status"}},
		{name: "non-root", args: []string{"--entrypoint", "id", appImage}, want: []string{"uid=10001"}, reject: []string{"uid=0("}},
		// The default command is the worker; with no Temporal to reach it must
		// exit with the documented "unavailable" code rather than hang.
		{
			name:     "worker without temporal",
			args:     []string{"--network", "none", "-e", "TEMPORAL_ADDRESS=127.0.0.1:1", appImage},
			wantCode: 3,
			want:     []string{"cannot reach Temporal at 127.0.0.1:1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--rm"}, tc.args...)
			r := run(ctx, t, nil, root, "docker", args...)
			out := r.stdout + r.stderr
			if r.code != tc.wantCode {
				t.Fatalf("docker %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, tc.wantCode, tail(out))
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, tail(out))
				}
			}
			for _, w := range tc.reject {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, tail(out))
				}
			}
		})
	}

	t.Run("files", func(t *testing.T) {
		id := strings.TrimSpace(mustRun(ctx, t, nil, root, "docker", "create", appImage).stdout)
		t.Cleanup(func() { run(ctx, t, nil, root, "docker", "rm", "-f", id) })
		dir := t.TempDir()
		bin := filepath.Join(dir, "autocoder")
		mustRun(ctx, t, nil, root, "docker", "cp", id+":/usr/local/bin/autocoder", bin)
		checkStatic(t, bin)

		bundle := filepath.Join(dir, "ca.crt")
		mustRun(ctx, t, nil, root, "docker", "cp", "-L", id+":/etc/ssl/certs/ca-certificates.crt", bundle)
		pem, err := os.ReadFile(bundle)
		if err != nil {
			t.Fatal(err)
		}
		if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(pem) || bytes.Count(pem, []byte("BEGIN CERTIFICATE")) < 50 {
			t.Errorf("CA bundle has %d certificates, want Debian's (over 50)", bytes.Count(pem, []byte("BEGIN CERTIFICATE")))
		}
	})
}

// checkStatic fails unless the binary needs no dynamic loader, so that any
// runtime base (distroless static, scratch) can run it.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("open binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %v program header: it is not static", p.Type)
		}
	}
	if f.Section(".symtab") != nil {
		t.Error("binary has a symbol table: it was not built with -ldflags=-s")
	}
}
