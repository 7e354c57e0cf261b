package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite sandbox/images/*/Dockerfile from the recipes")

// TestDockerfilesMatchRecipes keeps the committed registry Dockerfiles
// those the recipes give: one folder per image, whichever languages share
// it, and no folder of an image no language has.
func TestDockerfilesMatchRecipes(t *testing.T) {
	want := map[string]string{} // folder → Dockerfile
	for _, l := range languages.All() {
		p := Profile{Name: l.Name, TestCmd: l.Tests.Command, Sandbox: l.Sandbox} // the default image, whatever the env says
		dir, df := ImageDir(p.Image), Dockerfile(p, false)
		if prev, ok := want[dir]; ok && prev != df {
			t.Errorf("languages sharing image %s have different recipes (%s differs)", p.Image, l.Name)
		}
		want[dir] = df
	}
	root := "images"
	for dir, df := range want {
		path := filepath.Join(root, dir, "Dockerfile")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(df), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != df {
			t.Errorf("%s is not its recipe's (go test ./sandbox -run TestDockerfilesMatchRecipes -update); want:\n%s", path, df)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := want[e.Name()]; ok {
			continue
		}
		if *update {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s/%s is no language's image (-update removes it)", root, e.Name())
	}
}

// The generated file is one a daemon parses: the multi-line Setup survives
// as a script, and the offline variant names its base by a build argument.
func TestDockerfileShapes(t *testing.T) {
	golang := testProfile(t, "go")
	reg := Dockerfile(golang, false)
	for _, want := range []string{"FROM golang:", "    'cat > w_test.go <<'\\''EOF'\\''' \\\n", "GOCACHE=/opt/gocache sh -e /tmp/setup.sh", "USER 65534:65534\n", "GOPROXY=off"} {
		if !strings.Contains(reg, want) {
			t.Errorf("registry Dockerfile lacks %q:\n%s", want, reg)
		}
	}
	off := Dockerfile(testProfile(t, "python"), true)
	for _, want := range []string{"ARG BASE=" + BaseImage + "\nFROM $BASE\n", "apt-get install -y --no-install-recommends python3 python3-pytest"} {
		if !strings.Contains(off, want) {
			t.Errorf("offline Dockerfile lacks %q:\n%s", want, off)
		}
	}
	if off := Dockerfile(golang, true); !strings.Contains(off, "COPY host0 /usr/local/go\n") {
		t.Errorf("offline Go Dockerfile does not copy the host's Go:\n%s", off)
	}
}

func testProfile(t *testing.T, name string) Profile {
	t.Helper()
	l, err := languages.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return ProfileOf(l)
}

// TestImageBuiltOnFirstUse: the docker backend builds a missing image on
// its language's first run, once for two runs that come together, and
// both pass.
func TestImageBuiltOnFirstUse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a sandbox image: minutes")
	}
	p := testProfile(t, "python")
	p.Image = "autocoder/tmp-images-firstuse:1"
	dropImages(t, p.Image)
	builds := &messageCounter{prefix: "building sandbox image " + p.Image}
	r := dockerRunnerOf(t, p, slog.New(builds))

	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			results[i], errs[i] = r.Run(ctx, Spec{Profile: p.Name, Files: files("test_a.py", pyPass)})
		})
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].ExitCode != 0 {
			t.Errorf("run %d: exit %d, err %v\n%s%s", i, results[i].ExitCode, errs[i], results[i].Stdout, results[i].Stderr)
		}
	}
	if n := builds.count.Load(); n != 1 {
		t.Errorf("the image was built %d times, want once", n)
	}
}

// TestBuildImagesScriptFirstTry runs scripts/build-images.sh as on a fresh
// machine: no base image, no cached rootfs and no debootstrap on PATH. It
// must succeed the first time, and the image must run a test. It
// debootstraps a new base every time (minutes), so it runs on demand, like
// the other tests that build images from nothing; on a fresh machine the
// test command's own set-up builds every image with the same script.
func TestBuildImagesScriptFirstTry(t *testing.T) {
	if os.Getenv("AUTOCODER_DOCKER_BUILD_TEST") != "1" {
		t.Skip("debootstraps a Debian base for minutes; set AUTOCODER_DOCKER_BUILD_TEST=1")
	}
	if os.Geteuid() != 0 {
		testenv.RequireService(t, "root (debootstrap)", os.ErrPermission)
	}
	base, image := "autocoder/tmp-images-base:bookworm", "autocoder/tmp-images-script:1"
	dropImages(t, base, image)
	path := pathWithout("debootstrap")
	cmd := exec.Command("bash", "scripts/build-images.sh", "python")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PATH="+path, "AUTOCODER_IMAGE_WORKDIR="+t.TempDir(),
		"AUTOCODER_IMAGE_BASE="+base, "AUTOCODER_IMAGE_PYTHON="+image)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build-images.sh failed on the first try: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "installing debootstrap") {
		t.Errorf("the script did not meet a machine without debootstrap:\n%s", out)
	}
	p := testProfile(t, "python")
	p.Image = image
	r := dockerRunnerOf(t, p, slog.Default())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, Spec{Profile: p.Name, Files: files("test_a.py", "def test_bad():\n    assert 1 + 1 == 3\n")})
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stdout, "test_bad") {
		t.Errorf("a failing test in the built image: exit %d, err %v\n%s%s", res.ExitCode, err, res.Stdout, res.Stderr)
	}
}

// pathWithout is this process's PATH without the directories that hold
// the program.
func pathWithout(program string) string {
	var keep []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, program)); err != nil {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// dockerRunnerOf is a docker runner of the one profile, closed at cleanup.
func dockerRunnerOf(t *testing.T, p Profile, log *slog.Logger) Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := New(ctx, Config{Backend: "docker", PoolSize: -1, Profiles: []Profile{p}, Logger: log})
	if err != nil {
		testenv.RequireService(t, "docker backend", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// dropImages removes the images now and at cleanup, with the toolchain
// volumes made of them.
func dropImages(t *testing.T, images ...string) {
	t.Helper()
	ctx := context.Background()
	cli, err := newDockerClient(ctx)
	if err != nil {
		testenv.RequireService(t, "docker", err)
	}
	drop := func() {
		for _, img := range images {
			if _, err := cli.ImageRemove(ctx, img, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("remove %s: %v", img, err)
			}
		}
		if _, err := reapVolumes(ctx, cli); err != nil {
			t.Errorf("reap volumes: %v", err)
		}
	}
	drop()
	t.Cleanup(func() {
		drop()
		cli.Close()
	})
}

// messageCounter is a slog handler that counts the records whose message
// starts with prefix.
type messageCounter struct {
	prefix string
	count  atomic.Int32
}

func (h *messageCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *messageCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.count.Add(1)
	}
	return nil
}
func (h *messageCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *messageCounter) WithGroup(string) slog.Handler      { return h }

// TestGoCacheFromRecipe: the bwrap backend fills its Go build cache with
// the image recipe's Setup, run on the host.
func TestGoCacheFromRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the standard library: a minute")
	}
	p := testProfile(t, "go")
	goRoot := hostGoRoot(p)
	if goRoot == "" {
		testenv.RequireService(t, "go toolchain", exec.ErrNotFound)
	}
	final := filepath.Join(t.TempDir(), "gocache")
	if err := buildGoCache(final, goRoot, p); err != nil {
		t.Fatal(err)
	}
	entries, err := filepath.Glob(filepath.Join(final, "*", "*-d"))
	if err != nil || len(entries) < 100 {
		t.Errorf("the cache holds %d compiled entries, want the standard library's (err %v)", len(entries), err)
	}
}

// TestBuildContextOfHostDirs: an offline build's context holds a host
// directory under its place, a host file (through a link to it: the file
// itself, under the link's name) in its place's directory, and
// an optional copy the host lacks as an empty directory, which COPY copies
// nothing from; a required one the host lacks fails the build and says
// what to install.
func TestBuildContextOfHostDirs(t *testing.T) {
	dir := t.TempDir()
	mustDo(t, os.MkdirAll(filepath.Join(dir, "root/bin"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "root/bin/tool"), []byte("tool"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(dir, "node-20"), []byte("node binary"), 0o755))
	mustDo(t, os.Symlink("node-20", filepath.Join(dir, "node")))
	p := testProfile(t, "javascript")
	p.Recipe.HostDirs = []lang.HostDir{
		{Find: func() string { return filepath.Join(dir, "root") }, To: "/opt/root"},
		{Find: func() string { return filepath.Join(dir, "node") }, To: "/usr/local/bin", Optional: true},
		{Find: func() string { return "" }, To: "/usr/local/lib/x", Optional: true},
	}
	dirs, err := hostDirs(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mustDo(t, writeContext(&buf, Dockerfile(p, true), dirs))
	got := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		mustDo(t, err)
		data, err := io.ReadAll(tr)
		mustDo(t, err)
		got[hdr.Name] = string(data)
	}
	for name, want := range map[string]string{"host0/bin/tool": "tool", "host1/": "", "host1/node": "node binary", "host2/": ""} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("context %s = %q (there: %v), want %q; context: %q", name, v, ok, want, slices.Sorted(maps.Keys(got)))
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "host2/") && name != "host2/" {
			t.Errorf("the absent optional copy holds %s", name)
		}
	}
	for i, to := range []string{"/opt/root", "/usr/local/bin", "/usr/local/lib/x"} {
		if want := fmt.Sprintf("COPY host%d %s\n", i, to); !strings.Contains(got["Dockerfile"], want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}

	p.Recipe.HostDirs[2].Optional = false
	if _, err := hostDirs(p); err == nil || !strings.Contains(err.Error(), p.Install) {
		t.Errorf("a required copy the host lacks: %v, want an error naming %q", err, p.Install)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBuildErrorIsReadable: a failed RUN of a long script is reported by
// the script's start, its exit code and the output before it, not the
// whole script twice.
func TestBuildErrorIsReadable(t *testing.T) {
	script := "printf '%s\\n' " + strings.Repeat("'echo a line of the recipe' ", 200)
	var stream bytes.Buffer
	enc := json.NewEncoder(&stream)
	for _, m := range []map[string]any{
		{"stream": "Step 6/11 : RUN " + script + "\n"},
		{"stream": " ---> Running in cda91d238905\n"},
		{"stream": "\x1b[91mtwo module directories\n\x1b[0m"},
		{"errorDetail": map[string]any{"code": 1, "message": "The command '/bin/sh -c " + script + "' returned a non-zero code: 1"},
			"error": "The command '/bin/sh -c " + script + "' returned a non-zero code: 1"},
	} {
		mustDo(t, enc.Encode(m))
	}
	err := readProgress(&stream, "image build")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{"returned a non-zero code: 1", "two module directories", "The command '/bin/sh -c printf"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if len(msg) > 1200 || strings.ContainsRune(msg, '\x1b') {
		t.Errorf("the error is %d bytes, escapes %v: %s", len(msg), strings.ContainsRune(msg, '\x1b'), msg)
	}
}
