package sandbox

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ErrUnknownProfile reports a profile name that is not defined.
var ErrUnknownProfile = errors.New("unknown sandbox profile")

// Profile describes how to run one language's tests.
type Profile struct {
	Name string
	// Image is the docker image; it runs as uid 65534 with a read-only rootfs.
	Image string
	// TestCmd is the default test command, run in the workdir.
	TestCmd []string
	// TestSuffix ends the names of the files TestCmd runs tests from.
	TestSuffix string
	// HostPaths are host directories the bwrap backend mounts read-only at
	// the same path, beyond the base system directories.
	HostPaths []string
	// Env is the profile's part of the environment; the backend adds PATH,
	// HOME and the temp dir. Nothing comes from the worker's environment.
	Env map[string]string
	// GoCache, when set, is where a read-only pre-built Go build cache is
	// found in the sandbox; each run seeds its writable GOCACHE from it so
	// `go test` does not rebuild the standard library.
	GoCache string
	// ToolchainDirs are the image's directories the docker backend serves
	// from read-only volumes (see toolchainMounts).
	ToolchainDirs []string
	// Prewarm is a shell snippet a docker pool's first container runs
	// before it waits for its input: a trivial test run that loads the
	// toolchain and its files into the page and filesystem caches. It
	// leaves nothing in the workdir.
	Prewarm string
}

// prewarmDir is where Prewarm works; it is removed before the run.
const prewarmDir = tmpDir + "/.prewarm"

const (
	sandboxUID  = 65534
	workDir     = "/work"
	tmpDir      = "/tmp"
	imageGoRoot = "/usr/local/go"
	imageCache  = "/opt/gocache"
)

// imagePath is the PATH inside a container; the bwrap backend leaves out
// /usr/local so that the host's own tools there are not picked up.
const (
	imagePath = imageGoRoot + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	hostPath  = "/usr/bin:/bin:/usr/sbin:/sbin"
)

// toolchainDirs hold the interpreters, compilers and shared libraries of
// both images (Debian's packages, and the official images' /usr/local).
// Not /usr as a whole: docker mounts its init binary under /usr/sbin.
var toolchainDirs = []string{"/usr/bin", "/usr/lib", "/usr/local"}

func profiles() map[string]Profile {
	return map[string]Profile{
		"python": {
			Name:       "python",
			Image:      envOr("AUTOCODER_IMAGE_PYTHON", "autocoder/sandbox-python:1"),
			TestCmd:    []string{"python3", "-m", "pytest", "-q"},
			TestSuffix: ".py",
			Env: map[string]string{
				"PYTHONDONTWRITEBYTECODE": "1",
				"PYTHONUNBUFFERED":        "1",
			},
			ToolchainDirs: toolchainDirs,
			Prewarm:       `printf 'def test_w():\n    pass\n' > test_w.py && python3 -m pytest -q -p no:cacheprovider`,
		},
		"go": {
			Name:       "go",
			Image:      envOr("AUTOCODER_IMAGE_GO", "autocoder/sandbox-go:1"),
			TestCmd:    []string{"go", "test", "./..."},
			TestSuffix: "_test.go",
			Env: map[string]string{
				"GOTOOLCHAIN": "local",
				"GOPROXY":     "off",
				"GO111MODULE": "on",
				"CGO_ENABLED": "0",
				"GOFLAGS":     "",
				"GOPATH":      tmpDir + "/gopath",
				"GOMODCACHE":  tmpDir + "/gopath/pkg/mod",
				"GOTMPDIR":    tmpDir,
			},
			GoCache:       imageCache,
			ToolchainDirs: append(toolchainDirs, "/opt"),
			Prewarm:       `printf 'module w\n\ngo 1.21\n' > go.mod && printf 'package w\nimport "testing"\nfunc TestW(t *testing.T) {}\n' > w_test.go && go test -count=1 ./...`,
			HostPaths:     []string{hostGoRoot()},
		},
	}
}

// LookupProfile returns the named profile with env overrides applied.
func LookupProfile(name string) (Profile, error) {
	p, ok := profiles()[name]
	if !ok {
		return Profile{}, fmt.Errorf("%w: %q (have %s)", ErrUnknownProfile, name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// ProfileNames lists the defined profiles in order.
func ProfileNames() []string {
	var names []string
	for n := range profiles() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// environ builds the complete environment of a run: the profile's variables
// plus PATH, HOME and temp dirs.
func (p Profile) environ(path string) []string {
	env := map[string]string{
		"PATH":   path,
		"HOME":   tmpDir,
		"TMPDIR": tmpDir,
		"LANG":   "C.UTF-8",
		"USER":   "nobody",
	}
	for k, v := range p.Env {
		env[k] = v
	}
	if p.Name == "go" {
		env["GOCACHE"] = tmpDir + "/gocache"
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
