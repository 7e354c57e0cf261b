// Package rust is autocoder's knowledge of Rust: cargo test, offline,
// over the crates an install vendored, the sandbox image (the official image,
// or Debian's cargo and rustc 1.63 offline), the host toolchain the bwrap
// backend shows, and the failure parser lessons are keyed by.
package rust

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/policy"
)

// cargoTest runs every test target, on past a failing one, so one run
// shows every failure; nothing is fetched.
var cargoTest = []string{"cargo", "test", "--offline", "--no-fail-fast"}

// cargoBuild builds the library, binaries, examples and every test target
// without running one.
var cargoBuild = []string{"cargo", "test", "--offline", "--no-run"}

// Language returns Rust.
func Language() lang.Language {
	return lang.Language{
		Name:    "rust",
		Title:   "Rust",
		Aliases: []string{"rs"},
		Detect: lang.Detect{
			Markers:  []string{"Cargo.toml"},
			Commands: []string{"cargo", "rustc"},
			Task:     `\brust\b|\bcargo\b`,
		},
		Tests: lang.Tests{
			Command: cargoTest,
			Named:   named,
			Compile: cargoBuild,
			// Unit tests live inside the source files they test
			// (#[cfg(test)] mod tests), which cannot be protected whole:
			// only the integration tests under tests/ (and fixtures) are.
			IsTestFile: lang.UnderTestDir,
		},
		Guide:      guide,
		Extensions: []string{".rs"},
		Failure: lang.Failure{
			Parse:  Parse,
			Digest: Digest,
			// A doc test's name has spaces: "src/lib.rs - add (line 3)".
			Failing: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^---- (.+?) stdout ----$`),
				regexp.MustCompile(`(?m)^test (.+?) \.\.\. FAILED$`),
			},
		},
		Policy: lang.Policy{LineRules: policy.Rust},
		Deps:   deps,
		Sandbox: lang.Sandbox{
			Image: "autocoder/sandbox-rust:1",
			Env: map[string]string{
				// cargo's own cache and the build stay out of the project
				// and off the read-only toolchain.
				"CARGO_HOME":        "/tmp/cargo",
				"CARGO_TARGET_DIR":  "/tmp/target",
				"CARGO_NET_OFFLINE": "true",
				"CARGO_TERM_COLOR":  "never",
				// Incremental state only costs /tmp space in a one-off build.
				"CARGO_INCREMENTAL": "0",
				// A panic's message and location are what matter; a
				// backtrace would push them out of the kept output.
				"RUST_BACKTRACE": "0",
			},
			Recipe: lang.Recipe{
				Base:      "rust:1-slim-bookworm",
				BaseSetup: unproxy,
				Packages:  []string{"cargo", "rustc"},
			},
			ToolchainDirs: lang.DebianToolchainDirs,
			Prewarm:       `mkdir -p src && printf '[package]\nname = "w"\nversion = "0.1.0"\nedition = "2021"\n' > Cargo.toml && printf '#[test]\nfn w() {}\n' > src/lib.rs && cargo test --offline -q`,
			HostPaths:     hostPaths,
			HostBin:       hostBin,
			HostCheck:     []string{"cargo", "--version"},
			Install:       "apt-get install cargo, or install Rust with rustup as the user the worker runs as (a root worker's sandboxes cannot read /root)",
		},
	}
}

// guide holds to what both images run: Debian's rustc 1.63 offline, a
// newer one from the official image or the host.
const guide = `Language: Rust (rustc 1.63 or later; write edition 2021 code that 1.63 compiles: no let-else, no generic associated types, no OnceLock/LazyLock, no async fn in traits, no Option::is_some_and).
The project is a cargo package: Cargo.toml at the root ([package] name, version = "0.1.0", edition = "2021"), the library in src/lib.rs, a program in src/main.rs.
Prefer the standard library. A crate the code needs goes in Cargo.toml's [dependencies] (or [dev-dependencies] for the tests alone) with its version (itoa = "1.0"); it is downloaded before your commands and the tests run, and nothing downloads at run time (cargo add or cargo fetch in a command cannot). Do not write Cargo.lock (cargo makes it); if cargo cannot read an existing one ("lock file version"), delete it.
Unit tests go in the file they test, in #[cfg(test)] mod tests { use super::*; #[test] fn ... }; integration tests are files in tests/ that use the crate by its name. Tests run with cargo test; a test is named by its path as cargo prints it (tests::it_adds).`

// unproxy replaces the official image's rustup proxies with links to the
// toolchain's own programs: nothing at run time then reads rustup's
// settings, and a project's rust-toolchain file cannot make rustup try to
// download another toolchain.
const unproxy = `sysroot="$(rustc --print sysroot)" && for b in cargo rustc rustdoc; do ln -sf "$sysroot/bin/$b" "/usr/local/cargo/bin/$b"; done && cargo --version`

// namedScript runs cargo test with the names as libtest filters and fails
// when a name matched no test that passed: a filter that matches nothing
// runs nothing, and libtest calls that a success.
const namedScript = `out="$(cargo test --offline --no-fail-fast -- "$@" 2>&1)"; rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"
for n in "$@"; do
	printf '%s\n' "$out" | grep -E '^test .* \.\.\. ok$' | grep -qF -- "$n" || { echo "no test matched $n" >&2; exit 1; }
done`

// named runs the named tests: each name is a libtest filter, a part of a
// test's path as cargo prints it ("tests::it_adds"; an integration test's
// function name), so a name also runs the tests whose path contains it.
// Matching by part rather than --exact forgives a name without its module;
// each name must still match a passing test. With no names, it builds
// everything and runs no test.
func named(tests []string) ([]string, error) {
	if len(tests) == 0 {
		return slices.Clone(cargoBuild), nil
	}
	return append([]string{"sh", "-c", namedScript, "cargo-test"}, tests...), nil
}

// hostBin is the bin directory of the host toolchain, when there is one.
func hostBin() []string {
	if s := HostSysroot(); s != "" {
		return []string{filepath.Join(s, "bin")}
	}
	return nil
}

// hostPaths is the host toolchain's root, mounted read-only.
func hostPaths() []string {
	if s := HostSysroot(); s != "" {
		return []string{s}
	}
	return nil
}

// HostSysroot finds the host toolchain the sandbox can run: the rustc on
// PATH, a rustup install in the home directory, the official image's, then
// Debian's, each asked for its sysroot (rustup's proxies resolve to the
// active toolchain's directory, whose bin holds the real cargo and rustc).
// A toolchain the sandbox user cannot reach is passed over; "" when there
// is none.
var HostSysroot = sync.OnceValue(func() string {
	candidates := []string{"rustc"}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".cargo", "bin", "rustc"))
	}
	candidates = append(candidates, "/usr/local/cargo/bin/rustc", "/usr/bin/rustc")
	var seen []string
	for _, c := range candidates {
		s := sysroot(c)
		if s == "" || slices.Contains(seen, s) {
			continue
		}
		seen = append(seen, s)
		if _, err := os.Stat(filepath.Join(s, "bin", "cargo")); err == nil && sandboxCanRead(s) {
			return s
		}
	}
	return ""
})

// sysroot asks a rustc for its sysroot, with symlinks resolved.
func sysroot(rustc string) string {
	p, err := exec.LookPath(rustc)
	if err != nil {
		return ""
	}
	out, err := exec.Command(p, "--print", "sysroot").Output()
	if err != nil {
		return ""
	}
	s, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	if err != nil {
		return ""
	}
	return s
}

// sandboxCanRead reports whether a sandbox can reach dir. A worker that
// is not root runs its sandboxes as itself; a root worker runs them as
// other users, who need every directory above dir searchable by all (a
// rustup toolchain under /root, mode 0700, is not).
func sandboxCanRead(dir string) bool {
	if os.Geteuid() != 0 {
		return true
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}
