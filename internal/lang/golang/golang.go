// Package golang is autocoder's knowledge of Go: go test, the sandbox
// image with the worker's own Go and a pre-built cache, and the failure
// parser lessons are keyed by.
package golang

import (
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/repomap"
	"github.com/autocoder/autocoder/internal/signature"
)

// Language returns Go.
func Language() lang.Language {
	return lang.Language{
		Name:    "go",
		Title:   "Go",
		Aliases: []string{"golang"},
		Detect: lang.Detect{
			Markers:  []string{"go.mod", "go.work"},
			Commands: []string{"go", "gotestsum"},
			Task:     `\bgolang\b|\b(?:in|with|using) go\b|\bgo (?:module|program|package|service|cli|server|library)\b`,
		},
		Tests: lang.Tests{
			Command:      []string{"go", "test", "./..."},
			Named:        named,
			ConfirmNamed: true,
			IsTestFile:   func(p string) bool { return strings.HasSuffix(path.Base(p), "_test.go") || lang.UnderTestDir(p) },
		},
		Guide: `Language: Go. The project is a Go module: keep or create go.mod ("module example.com/app", "go 1.21"). Prefer the standard library.
A third-party module the code needs goes in go.mod's require with its version ("require github.com/owner/module v1.2.3"); it is downloaded before your commands and the tests run, and nothing downloads at run time (go get in a command cannot). After changing the requires, run "go mod tidy" with the run tool: it completes go.sum from the downloaded modules, and the tests fail without a complete go.sum.
Tests are *_test.go files using package testing.`,
		Extensions: []string{".go"},
		Symbols:    repomap.GoExtractor.Symbols,
		Failure: lang.Failure{
			Parse:  signature.ParseGo,
			Digest: digest,
			Failing: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`),
				regexp.MustCompile(`(?m)^FAIL\s+(\S+)\s+\[build`),
			},
		},
		Policy: lang.Policy{Checker: lang.CheckerGo},
		// The defaults of GOPROXY (its "direct" fallback, to any VCS host,
		// is left out) and GOSUMDB.
		Deps: lang.Deps{Registries: []string{"proxy.golang.org", "sum.golang.org"},
			// go.sum is no manifest: it only checks what go.mod selects,
			// and the tests check it against the installed modules. Keyed
			// on it, the install would start over once go mod tidy has
			// written it. A vendored project builds from vendor/ offline;
			// a workspace (go.work) and modules that replace directives
			// name in the project give the install their go.mod too.
			Manifests: []string{"go.mod", "go.work", "go.work.sum", vendored},
			Local:     localModules,
			Declares:  requiresModules,
			// The whole build list, so that go mod tidy and go test find
			// offline whatever the code imports, through indirect
			// requirements too. Each module is checked against the
			// checksum database (GOSUMDB's default) as it is downloaded:
			// what the tests then trust without it. The cache stays
			// writable (-modcacherw) for the worker to remove.
			Install: []string{"go", "mod", "download", "all"},
			// GOSUMDB is set here, not left to the toolchain's go.env,
			// which a distribution may ship with the checksum database
			// off; no version control tool is ever run.
			InstallEnv: map[string]string{"GOMODCACHE": modCache, "GOFLAGS": "-mod=mod -modcacherw",
				"GOSUMDB": "sum.golang.org", "GOVCS": "*:off"},
			// Then the installed packages the project imports are built
			// into a build cache of the install's, so a run compiles only
			// the project's own. See warmScript.
			Warm:    []string{"sh", "-c", warmScript},
			WarmEnv: map[string]string{"GOCACHE": lang.DepsGoCache},
			// The tests and the model's commands: the installed modules,
			// read-only, no proxy, and go.mod and go.sum as the user's own
			// go build would take them (-mod=readonly).
			Env: map[string]string{"GOMODCACHE": modCache, "GOSUMDB": "off"},
			// The modules of a private proxy, which the checksum database
			// does not know (GOPRIVATE, which GONOSUMDB defaults to): never
			// GONOPROXY, as every module comes through a proxy.
			HostEnv:  map[string][]string{"GONOSUMDB": {"go", "env", "GONOSUMDB"}},
			IndexVar: "GOPROXY",
			Index:    proxyList,
			Required: true,
			Versions: lang.Versions{API: lang.VersionsGoProxy, URL: defaultProxy,
				Configured: []string{"go", "env", "GOPROXY"}},
			// go get alone: go mod tidy would drop a require that no code
			// imports yet, and the model adds a module before it writes
			// the code that uses it.
			Add: lang.Add{Command: goGet, Files: []string{"go.mod", "go.sum"}, Example: "golang.org/x/text@v0.21.0",
				Guide: `To add a module, call install with "module@version" (golang.org/x/text@v0.21.0): go get adds it to go.mod and go.sum, ` +
					`the only way to reach the module proxy; go.mod marks it "// indirect" until the code imports it, which go mod tidy then corrects offline.`}},
		Sandbox: lang.Sandbox{
			Image: "autocoder/sandbox-go:1",
			Env: map[string]string{
				"GOTOOLCHAIN": "local",
				"GOPROXY":     "off",
				"GO111MODULE": "on",
				"CGO_ENABLED": "0",
				"GOFLAGS":     "",
				"GOPATH":      "/tmp/gopath",
				"GOMODCACHE":  "/tmp/gopath/pkg/mod",
				"GOTMPDIR":    "/tmp",
				"GOCACHE":     "/tmp/gocache",
			},
			GoCache: "/opt/gocache",
			Recipe: lang.Recipe{
				Base:  "golang:1.26-bookworm",
				Setup: warmCache,
				// Debian bookworm's Go is 1.19: the offline image gets the
				// worker's own.
				HostDirs: []lang.HostDir{{Find: HostRoot, To: "/usr/local/go", Skip: []string{"pkg/obj", "test", "api"}}},
			},
			ToolchainDirs: append(slices.Clone(lang.DebianToolchainDirs), "/opt"),
			Prewarm:       `printf 'module w\n\ngo 1.21\n' > go.mod && printf 'package w\nimport "testing"\nfunc TestW(t *testing.T) {}\n' > w_test.go && go test -count=1 ./...`,
			HostPaths:     func() []string { return []string{HostRoot()} },
			HostBin:       hostBin,
			HostCheck:     []string{"go", "version"},
			HostToolchain: "go",
			Install:       "install Go 1.21 or later (https://go.dev/dl/)",
		},
	}
}

// warmScript builds the installed packages the project's code and tests
// import as go test builds them for the tests (its flags, its
// environment), with the facts go vet keeps of them: through a test of a
// package of its own, made in the project's module, that imports them and
// nothing else, and -exec true, which runs no test binary. The packages
// are those of downloaded modules only: not one of the project's (a module
// replaced by a directory is the project's), none built for the project's
// tests, and none under internal/, which only its own module may import
// (the packages importing it build it). So nothing of the project is built
// into the cache, which serves every task with the same manifests (go
// list, which writes what it makes of the project's tests, has a cache of
// its own). The links to the image's cache go: a run lays this cache over
// that one.
const warmScript = `set -f
pkgs=$(GOCACHE=${TMPDIR:-/tmp}/warm-list go list -e -deps -test -f '{{if and (not .Standard) (not .ForTest) .Module (not .Module.Main) (or (not .Module.Replace) .Module.Replace.Version) (not .Incomplete) (ne .Name "main")}}{{.ImportPath}}{{end}}' ./... 2>/dev/null | grep -Ev '(^|/)internal(/|$)' | sort -u)
[ -n "$pkgs" ] || exit 0
dir=$(mktemp -d ./autocoder-warm.XXXXXX) || exit 0
{ echo 'package warm'; for p in $pkgs; do printf 'import _ "%s"\n' "$p"; done; } > "$dir/warm_test.go" || exit 0
go test -count=1 -run '^$' -exec true "./${dir#./}" >/dev/null
status=$?
find "$GOCACHE" -type l -delete
exit $status`

// defaultProxy is GOPROXY's documented default.
const defaultProxy = "https://proxy.golang.org,direct"

// modCache is the module cache of an install, under lang.DepsDir.
const modCache = lang.DepsDir + "/mod"

// moduleSpec is a module path whose first element is a domain, with an
// optional version query (@v1.2.3, @latest): what go get fetches from a
// module proxy, never a package directory of the project.
var moduleSpec = regexp.MustCompile(`^[a-z0-9][-a-z0-9]*(\.[-a-z0-9]+)+(/[A-Za-z0-9_~+-][A-Za-z0-9._~+-]*)*(@[A-Za-z0-9._+-]+)?$`)

// goGet adds modules with go get; Go has no test-only requirements.
func goGet(pkgs []string, _ bool) ([]string, error) {
	if err := lang.CheckPackages(pkgs, moduleSpec, "golang.org/x/text@v0.21.0"); err != nil {
		return nil, err
	}
	return append([]string{"go", "get"}, pkgs...), nil
}

// vendored marks a project whose modules are in its vendor directory,
// which the go command then builds from.
const vendored = "vendor/modules.txt"

// requiresModules reports a go.mod that requires a module that neither a
// directory of the project replaces nor its vendor directory holds: what
// the install is for.
func requiresModules(manifests map[string][]byte) bool {
	if _, ok := manifests[vendored]; ok {
		return false
	}
	local := map[string]bool{}
	for _, d := range directives(manifests["go.mod"], "replace") {
		if old, target, ok := strings.Cut(strings.Join(d, " "), "=>"); ok && isLocalPath(firstField(target)) {
			local[firstField(old)] = true
		}
	}
	for _, d := range directives(manifests["go.mod"], "require") {
		if len(d) > 0 && !local[d[0]] {
			return true
		}
	}
	return false
}

// localModules are the go.mod files of the project's own modules that an
// install reads besides the root's: those of the directories go.mod's
// replace directives and go.work's use directives name, inside the
// project.
func localModules(manifests map[string][]byte) []string {
	var dirs []string
	for _, d := range directives(manifests["go.mod"], "replace") {
		if _, target, ok := strings.Cut(strings.Join(d, " "), "=>"); ok {
			dirs = append(dirs, firstField(target))
		}
	}
	for _, d := range directives(manifests["go.work"], "use") {
		dirs = append(dirs, firstField(strings.Join(d, " ")))
	}
	var out []string
	for _, dir := range dirs {
		if !isLocalPath(dir) || path.IsAbs(dir) {
			continue
		}
		if p := path.Join(dir, "go.mod"); p != "go.mod" && !strings.HasPrefix(p, "../") && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// directives are the arguments of each verb directive of a go.mod or
// go.work file, on its own line or inside a block, without comments.
func directives(file []byte, verb string) [][]string {
	var out [][]string
	block := ""
	for _, line := range strings.Split(string(file), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(line))
		switch {
		case len(f) == 0:
		case block != "":
			if f[0] == ")" {
				block = ""
			} else if block == verb {
				out = append(out, f)
			}
		case len(f) >= 2 && f[1] == "(":
			block = f[0]
			if len(f) > 2 && f[2] == ")" { // "require ()"
				block = ""
			}
		case f[0] == verb:
			out = append(out, f[1:])
		}
	}
	return out
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], `"`)
}

// isLocalPath reports a replacement that is a directory, not a module:
// Go's rule, a path that starts with ./ or ../ (or is absolute).
func isLocalPath(p string) bool {
	return strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || p == "." || p == ".." || path.IsAbs(p)
}

// proxyList is the GOPROXY an install uses and the proxies it reaches:
// the configured list (Go's default when none is) without "direct",
// which would fetch from any version control host, and "off", and
// without the file:// proxies a sandbox cannot see.
func proxyList(index string) (string, []string, error) {
	if index == "" {
		index = defaultProxy
	}
	var urls []string
	for _, e := range strings.FieldsFunc(index, func(r rune) bool { return r == ',' || r == '|' }) {
		if e = strings.TrimSpace(e); strings.HasPrefix(e, "https://") || strings.HasPrefix(e, "http://") {
			urls = append(urls, e)
		}
	}
	if len(urls) == 0 {
		return "", nil, fmt.Errorf("GOPROXY %q names no module proxy the install can reach through the egress proxy "+
			"(direct, off and file:// cannot be): name one in registries.index (go=https://...) or in the worker's go env GOPROXY", index)
	}
	return strings.Join(urls, ","), urls, nil
}

// named runs the named tests: their top-level part (subtests run with
// their parent) over every package, or the package patterns among them,
// which start with a dot. With no names, it compiles and vets every
// package and runs no test.
func named(tests []string) ([]string, error) {
	var names, pkgs []string
	for _, t := range tests {
		if strings.HasPrefix(t, ".") {
			pkgs = append(pkgs, t)
			continue
		}
		top, _, _ := strings.Cut(t, "/")
		if q := regexp.QuoteMeta(top); !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	run := "^$"
	if len(names) > 0 {
		run = "^(" + strings.Join(names, "|") + ")$"
	}
	return append([]string{"go", "test", "-count=1", "-run", run}, pkgs...), nil
}

// hostBin is the host Go root's bin, when there is one.
func hostBin() []string {
	if r := HostRoot(); r != "" {
		return []string{r + "/bin"}
	}
	return nil
}

// HostRoot finds the host's Go root: the go on PATH, else the usual
// install locations; "" when there is none.
var HostRoot = sync.OnceValue(func() string {
	for _, goBin := range []string{"go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"} {
		p, err := exec.LookPath(goBin)
		if err != nil {
			continue
		}
		out, err := exec.Command(p, "env", "GOROOT").Output()
		if err != nil {
			continue
		}
		if root, err := filepath.EvalSymlinks(strings.TrimSpace(string(out))); err == nil && root != "" {
			return root
		}
	}
	return ""
})

// warmCache pre-compiles into $GOCACHE what a small test usually needs, so
// that `go test` in a fresh sandbox links instead of building the standard
// library. It runs with the sandbox's Go settings: cache keys depend on
// them, and entries built with others would be misses.
const warmCache = `w=$(mktemp -d)
cd "$w"
printf 'module warm\n\ngo 1.21\n' > go.mod
cat > w_test.go <<'EOF'
package warm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var _ = []any{bytes.NewReader, json.Marshal, errors.New, fmt.Sprint, math.Abs, os.Getenv,
	regexp.MustCompile, sort.Ints, strconv.Itoa, strings.ToUpper, sync.Once{}, time.Now}

func TestWarm(t *testing.T) {}
EOF
go test -count=1 ./...
go vet ./...
cd /
rm -rf "$w"
chmod -R a+rX "$GOCACHE"`
