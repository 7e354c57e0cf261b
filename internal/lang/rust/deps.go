package rust

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/autocoder/autocoder/internal/lang"
)

// The install vendors the crates (cargo vendor) into vendorDir, and
// writes in cargoHome the configuration that replaces every registry by
// that directory: the runs build from a directory source, offline, with
// CARGO_HOME read-only (cargo writes nothing there for a directory
// source), whatever registry the install fetched from. A registry cache
// would need the same registry configured in the runs, and cargo writes
// its index cache and lock files in CARGO_HOME as it reads them.
const (
	vendorDir = lang.DepsDir + "/vendor"
	cargoHome = lang.DepsDir + "/cargo"
)

// indexVar is the install's variable that names the configured index
// (registries.index rust=URL, as sparseIndex writes it): the install's
// config.toml replaces crates.io with that registry.
const indexVar = "CARGO_CONFIGURED_INDEX"

// deps installs the crates Cargo.toml declares (and Cargo.lock pins),
// from crates.io's sparse index and the host its config.json names for
// downloads, or from the sparse registry registries.index names.
var deps = lang.Deps{
	Registries:  []string{"index.crates.io", "static.crates.io"},
	Manifests:   []string{"Cargo.toml", "Cargo.lock"},
	Local:       localManifests,
	Declares:    declaresCrates,
	Install:     []string{"sh", "-c", cargoVendor},
	InstallText: "cargo vendor, with Cargo.lock when there is one",
	// The sandbox's CARGO_HOME (/tmp) holds the install's downloads,
	// which are not kept: the vendored crates are. crates.io is read
	// through its sparse index, the only one the proxy allows: cargo's
	// default from 1.70 on, and before 1.68 an unstable feature, which
	// Debian's cargo (bookworm's 1.63 and 1.65) lets its users turn on; a
	// newer cargo ignores the setting. A git dependency is cloned from its
	// host, which the proxy refuses unless the configuration allows it.
	InstallEnv: map[string]string{"CARGO_NET_OFFLINE": "false", "CARGO_REGISTRIES_CRATES_IO_PROTOCOL": "sparse",
		"CARGO_UNSTABLE_SPARSE_REGISTRY": "true"},
	Env:      map[string]string{"CARGO_HOME": cargoHome},
	IndexVar: indexVar,
	Index:    sparseIndex,
	// Offline, cargo fails on the first crate with "no matching package":
	// where installs are off, the check says why instead.
	Required: true,
	Versions: lang.Versions{API: lang.VersionsCrates, URL: "https://index.crates.io"},
	Add: lang.Add{Command: cargoAdd, Files: []string{"Cargo.toml", "Cargo.lock"}, Example: "itoa@1.0.11",
		Guide: `To add a crate, call install with "name@version" (itoa@1.0.11; dev: true for one only the tests need): cargo add writes it to Cargo.toml ` +
			`and Cargo.lock, the only way to reach the registry; the tests and commands find it installed.`},
}

// cargoSetup prepares a run of cargo over the project's manifests, the
// only files of the project an install or an add has: the configured
// index, when there is one, replaces crates.io, and each package without
// src/lib.rs gets an empty one, as cargo reads a package only with a
// target; madeTargets lists them.
const cargoSetup = `command -v cargo >/dev/null || { echo "this sandbox has no cargo: install Rust where the worker runs"; exit 127; }
set -e
mkdir -p "$CARGO_HOME"
if [ -n "${` + indexVar + `:-}" ]; then
  printf '[source.crates-io]\nreplace-with = "configured"\n\n[source.configured]\nregistry = "%s"\n' "$` + indexVar + `" > "$CARGO_HOME/config.toml"
fi
find . -name Cargo.toml -type f | while read -r m; do
  d="$(dirname "$m")"
  [ -e "$d/src/lib.rs" ] || [ -e "$d/src/main.rs" ] || { mkdir -p "$d/src" && : > "$d/src/lib.rs" && echo "$d/src/lib.rs" >> "` + madeTargets + `"; }
done
`

// madeTargets lists the targets cargoSetup made, for an add to remove:
// they are not the project's.
const madeTargets = "/tmp/cargo-made-targets"

// cargoVendor vendors the crates of the project's manifests. cargo's
// output on stdout is the configuration that makes the runs use the
// vendored crates, git sources included.
const cargoVendor = cargoSetup + `mkdir -p ` + cargoHome + `
cargo vendor --respect-source-config ` + vendorDir + ` > ` + cargoHome + `/config.toml
`

// crateSpec is a crate of the registry with an optional version
// requirement (itoa@1.0.11, serde@^1): never a path, a URL or an option.
var crateSpec = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}(@[0-9A-Za-z.^~<>=*+-]+)?$`)

// cargoAdd adds crates to Cargo.toml with cargo add, which resolves them
// against the registry and writes Cargo.lock: what the install then
// vendors.
func cargoAdd(pkgs []string, dev bool) ([]string, error) {
	if err := lang.CheckPackages(pkgs, crateSpec, "itoa@1.0.11"); err != nil {
		return nil, err
	}
	cmd := []string{"sh", "-c", cargoSetup + `cargo add "$@"
if [ -f ` + madeTargets + ` ]; then xargs rm -f < ` + madeTargets + `; fi`, "cargo-add"}
	if dev {
		cmd = append(cmd, "--dev")
	}
	return append(cmd, pkgs...), nil
}

// sparseIndex is the configured index as cargo names a sparse registry
// (sparse+URL/), and the URL the proxy lets the install reach. Cargo
// speaks the sparse protocol over HTTP(S) only: a git index, which cargo
// would clone through the proxy from anywhere, is refused.
func sparseIndex(index string) (string, []string, error) {
	if index == "" {
		return "", nil, nil
	}
	raw := strings.TrimPrefix(index, "sparse+")
	u, err := url.Parse(raw)
	// The script writes it in a TOML string.
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(raw, "\"\\\n") {
		return "", nil, fmt.Errorf("the Rust index %q is not a sparse registry's URL (https://host/path/, as Cargo's sparse+ names it)", index)
	}
	if !strings.HasSuffix(raw, "/") {
		raw += "/"
	}
	return "sparse+" + raw, []string{raw}, nil
}

// dependencyTables are the tables of a Cargo.toml (or of one of its
// [target.'cfg'] tables) that name crates.
var dependencyTables = []string{"dependencies", "dev-dependencies", "build-dependencies"}

// manifestDeps are the dependency entries of a Cargo.toml, by name: a
// version string, or a table (path, git, version, workspace...).
func manifestDeps(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := map[string]any{}
	add := func(t map[string]any) {
		for _, name := range dependencyTables {
			d, _ := t[name].(map[string]any)
			for k, v := range d {
				out[k] = v
			}
		}
	}
	add(doc)
	targets, _ := doc["target"].(map[string]any)
	for _, t := range targets {
		if t, ok := t.(map[string]any); ok {
			add(t)
		}
	}
	if ws, ok := doc["workspace"].(map[string]any); ok {
		d, _ := ws["dependencies"].(map[string]any)
		for k, v := range d {
			out[k] = v
		}
	}
	return out, nil
}

// declaresCrates reports manifests that name a crate not of the project
// itself (a path dependency is): what the install is for. One cargo
// cannot read does too, for cargo to say what is wrong.
func declaresCrates(manifests map[string][]byte) bool {
	for name, data := range manifests {
		if path.Base(name) != "Cargo.toml" {
			continue
		}
		ds, err := manifestDeps(data)
		if err != nil {
			return true
		}
		for _, d := range ds {
			t, ok := d.(map[string]any)
			if !ok {
				return true // name = "1.0"
			}
			if _, local := t["path"]; !local {
				return true
			}
		}
	}
	return false
}

// localManifests are the Cargo.toml files of the project's own packages
// that the install reads besides the root's: each manifest's path
// dependencies and the workspace members it names, inside the project. A
// member's glob (crates/*) is kept as a pattern of manifests.
func localManifests(manifests map[string][]byte) []string {
	var out []string
	for name, data := range manifests {
		if path.Base(name) != "Cargo.toml" {
			continue
		}
		var dirs []string
		if ds, err := manifestDeps(data); err == nil {
			for _, d := range ds {
				if t, ok := d.(map[string]any); ok {
					if p, ok := t["path"].(string); ok {
						dirs = append(dirs, p)
					}
				}
			}
		}
		var doc struct {
			Workspace struct {
				Members []string `toml:"members"`
			} `toml:"workspace"`
		}
		if toml.Unmarshal(data, &doc) == nil {
			dirs = append(dirs, doc.Workspace.Members...)
		}
		for _, d := range dirs {
			if path.IsAbs(d) {
				continue
			}
			p := path.Join(path.Dir(name), d, "Cargo.toml")
			if p != "Cargo.toml" && !strings.HasPrefix(p, "../") && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}
