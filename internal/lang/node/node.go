// Package node is autocoder's knowledge of JavaScript and TypeScript on
// Node.js: their tests (the project's own npm test script, Jest-style
// tests under jest, Node's built-in runner, tsc), the sandbox image they
// share (Node 20 with jest 29 and TypeScript 4.9: Debian trixie's, and
// the official image of the same versions), and the failure parser
// lessons are keyed by.
package node

import (
	"encoding/json"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/policy"
)

// image is the sandbox image both languages run in.
const image = "autocoder/sandbox-node:3"

// nodeCommands are the programs a test command of either language runs.
var nodeCommands = []string{"node", "nodejs", "npm", "npx", "jest", "yarn", "pnpm"}

// deps installs what package.json declares (and package-lock.json pins)
// with npm, from npm's default registry (https://registry.npmjs.org/),
// which serves the packages' tarballs too, or the one registries.index
// names (npm_config_registry). The runs see the install's node_modules
// at the project's, where Node finds packages from every file of the
// project and npm scripts their binaries.
var deps = lang.Deps{
	Registries:  []string{"registry.npmjs.org"},
	Manifests:   []string{"package.json", "package-lock.json", ".npmrc"},
	Local:       localPackages,
	Declares:    declaresPackages,
	Install:     sh(npmInstall),
	InstallText: "npm install --ignore-scripts, or npm ci with package-lock.json",
	Link:        "node_modules",
	IndexVar:    "npm_config_registry",
	Versions:    lang.Versions{API: lang.VersionsNpm, URL: "https://registry.npmjs.org"},
	Add: lang.Add{Command: npmAdd, Files: []string{"package.json", "package-lock.json"}, Example: "left-pad@1.3.0",
		Guide: `To add a package, call install with "name@version" (dev: true for one only the tests need): npm install writes it to package.json ` +
			`and package-lock.json, the only way to reach the registry; the tests and commands find it installed.`},
}

// packageSpec is a package of the registry, scoped or not, with an
// optional version, range or tag: never a URL, a path, a git or alias
// spec (their colon or slash), or an option.
var packageSpec = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*(@[A-Za-z0-9._^~<>=*+-]+)?$`)

// npmAdd adds packages to package.json and package-lock.json with npm
// install --package-lock-only: npm resolves them against the registry
// and writes both files without a node_modules (the checks install into
// their own) and without running any package's scripts. Versions are
// saved exact, as the guide asks.
func npmAdd(pkgs []string, dev bool) ([]string, error) {
	if err := lang.CheckPackages(pkgs, packageSpec, "left-pad@1.3.0"); err != nil {
		return nil, err
	}
	save := "--save-prod"
	if dev {
		save = "--save-dev"
	}
	return sh(npmAddScript, append([]string{save}, pkgs...)...), nil
}

// npmAddScript runs npm install with its first argument (how to save)
// over the rest, the packages; npm's cache lives in the scratch DepsDir
// while it runs, and not after.
const npmAddScript = `command -v npm >/dev/null || { echo "this sandbox has no npm: install it where the worker runs (apt-get install npm)"; exit 127; }
npm install --package-lock-only --save-exact --no-offline --ignore-scripts --install-links=false --no-audit --no-fund --logs-max=0 --cache ` + lang.DepsDir + `/.npm-cache "$@"
st=$?
rm -rf ` + lang.DepsDir + `/.npm-cache
exit $st
`

// npmInstall installs the project's packages in lang.DepsDir: npm ci when
// it has a lock file, npm install otherwise (or when the lock file is out
// of date), which writes one there. It runs over a copy of the manifests
// there, the workspaces' and file: packages' package.json included: npm
// links those packages into node_modules by a relative path, which from
// the project's node_modules, where the runs see it, reaches the
// project's own sources. The project's .npmrc is the
// install's: the registries it names for its scopes are asked, and
// refused unless the configuration allows them, never swapped for the
// default one. No package's install scripts run (they would have the
// network the tests lack); npm's cache lives in the install while it
// runs, and not after. The sandbox's npm is offline: not this one.
const npmInstall = `cp -R . ` + lang.DepsDir + `/ || exit 1
cmd=install
if [ -f package-lock.json ]; then cmd=ci; fi
cd ` + lang.DepsDir + ` || exit 1
command -v npm >/dev/null || { echo "this sandbox has no npm: install it where the worker runs (apt-get install npm)"; exit 127; }
npm_() { npm "$1" --no-offline --ignore-scripts --install-links=false --include=dev --no-audit --no-fund --logs-max=0 --cache ` + lang.DepsDir + `/.npm-cache; }
npm_ "$cmd"
st=$?
if [ $st -ne 0 ] && [ "$cmd" = ci ]; then
  echo "npm ci failed (is package-lock.json out of date with package.json?): trying npm install, which updates the lock file in ` + lang.DepsDir + `"
  npm_ install
  st=$?
fi
rm -rf ` + lang.DepsDir + `/.npm-cache
exit $st
`

// dependencyFields are the fields of a package.json that name packages.
var dependencyFields = []string{"dependencies", "devDependencies", "optionalDependencies", "peerDependencies"}

// declaresPackages reports package.json files that name a package to
// install, or workspaces to link; one npm cannot read does too, for npm
// to say what is wrong.
func declaresPackages(manifests map[string][]byte) bool {
	for name, data := range manifests {
		if path.Base(name) != "package.json" {
			continue
		}
		var pkg map[string]json.RawMessage
		if err := json.Unmarshal(data, &pkg); err != nil {
			return true
		}
		if len(workspaces(pkg)) > 0 {
			return true
		}
		for _, field := range dependencyFields {
			var names map[string]any
			if json.Unmarshal(pkg[field], &names) == nil && len(names) > 0 {
				return true
			}
		}
	}
	return false
}

// workspaces are the workspace directories (or globs of them) a
// package.json names, as an array or npm's {"packages": [...]}.
func workspaces(pkg map[string]json.RawMessage) []string {
	var dirs []string
	if json.Unmarshal(pkg["workspaces"], &dirs) == nil {
		return dirs
	}
	var obj struct {
		Packages []string `json:"packages"`
	}
	_ = json.Unmarshal(pkg["workspaces"], &obj)
	return obj.Packages
}

// localSpec is the path a dependency's spec names on the disk, as npm
// reads one: file:PATH, or a path that starts with ./, ../ or /.
func localSpec(spec string) (string, bool) {
	if p, ok := strings.CutPrefix(spec, "file:"); ok {
		return p, true
	}
	if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || strings.HasPrefix(spec, "/") {
		return spec, true
	}
	return "", false
}

// bins are the files a package.json's bin names, as a path or by name.
func bins(pkg map[string]json.RawMessage) []string {
	var one string
	if json.Unmarshal(pkg["bin"], &one) == nil && one != "" {
		return []string{one}
	}
	var named map[string]string
	_ = json.Unmarshal(pkg["bin"], &named)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(named)) {
		out = append(out, named[k])
	}
	return out
}

// localPackages are the project's files an install reads besides the
// root package.json: each workspace's package.json (a glob as a
// pattern), and the package.json of each file: dependency's directory,
// or its tarball, inside the project, and the files their bin names.
func localPackages(manifests map[string][]byte) []string {
	var out []string
	add := func(dir, p string) {
		if path.IsAbs(p) {
			return
		}
		p = path.Join(dir, p)
		if p != "package.json" && p != "." && !strings.HasPrefix(p, "../") && p != ".." && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for name, data := range manifests {
		if path.Base(name) != "package.json" {
			continue
		}
		var pkg map[string]json.RawMessage
		if json.Unmarshal(data, &pkg) != nil {
			continue
		}
		dir := path.Dir(name)
		if name != "package.json" {
			// npm links a local package's bins only where their files
			// are: the install has them, the runs the project's.
			for _, bin := range bins(pkg) {
				add(dir, bin)
			}
		}
		for _, w := range workspaces(pkg) {
			add(dir, path.Join(w, "package.json"))
		}
		for _, field := range dependencyFields {
			var specs map[string]string
			_ = json.Unmarshal(pkg[field], &specs)
			for _, spec := range specs {
				target, ok := localSpec(spec)
				switch {
				case !ok:
				case strings.HasSuffix(target, ".tgz") || strings.HasSuffix(target, ".tar.gz") || strings.HasSuffix(target, ".tar"):
					add(dir, target)
				default:
					add(dir, path.Join(target, "package.json"))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// JavaScript returns JavaScript on Node.js.
func JavaScript() lang.Language {
	return lang.Language{
		Name:    "javascript",
		Title:   "JavaScript",
		Aliases: []string{"js", "node", "nodejs"},
		Detect: lang.Detect{
			Markers:  []string{"package.json"},
			Commands: nodeCommands,
			Task:     `\bjavascript\b|\bnode\.?js\b|\bjs\b|\bexpress(?:\.js)?\b|\bnpm\b|\bjest\b`,
		},
		Tests: lang.Tests{
			Command:    jsTestCmd,
			Describe:   "the package.json `test` script (run as `npm test` runs it; npm itself only when it would add something: pre/post steps, `config`, a project `.npmrc`, `npm_` variables), else `jest --ci` (in the image), else `node --test`",
			Named:      named(jsNamedScript),
			Compile:    jsCompile,
			IsTestFile: isTestFile,
		},
		Guide: `Language: JavaScript on Node.js 20 (write code that runs on Node 20; use CommonJS require/module.exports unless package.json says "type": "module").
` + depsGuide + `
Tests: name test files *.test.js (or put them under test/). Write them with Node's built-in runner:
  const test = require('node:test'); // or: const { describe, it } = require('node:test');
  const assert = require('node:assert/strict');
They run with node --test. If package.json has a "test" script, npm test runs the tests instead; Jest-style tests (describe/it/expect without imports) that a project already has run with jest 29.`,
		Extensions: []string{".js", ".mjs", ".cjs", ".jsx"},
		Failure:    failure,
		Policy:     lang.Policy{LineRules: policy.JavaScript},
		Deps:       deps,
		Sandbox:    sandbox(jsPrewarm, []string{"node", "--version"}, "install Node.js 20 or later (apt-get install nodejs on Debian 13 or Ubuntu 24.04)"),
	}
}

// depsGuide is what both guides say of packages.
const depsGuide = `Prefer Node's built-in modules. A package the code needs goes in package.json's "dependencies", one only its tests need (a test library) in "devDependencies", each with an exact version ("name": "1.2.3"); it is installed before the tests run (npm install, without the packages' install scripts) and found in node_modules by require and import, and npm scripts find its binaries. The code and tests run with no network: nothing installs anything then (no npm install in commands). The lock file that install wrote is /deps/package-lock.json: cp /deps/package-lock.json . keeps it in the project.`

// TypeScript returns TypeScript, compiled by tsc and run on Node.js.
func TypeScript() lang.Language {
	return lang.Language{
		Name:    "typescript",
		Title:   "TypeScript",
		Aliases: []string{"ts"},
		Detect: lang.Detect{
			Markers: []string{"tsconfig.json"},
			// Node's programs too: "npm test" in a project with both
			// package.json and tsconfig.json names both languages, and
			// Rank decides.
			Commands: append([]string{"tsc", "ts-node", "tsx"}, nodeCommands...),
			Task:     `\btypescript\b|\bts\b|\btsc\b|\btsconfig\b`,
			Rank:     1,
		},
		Tests: lang.Tests{
			Command:    tsTestCmd,
			Describe:   "the package.json `test` script, else `tsc` (the project's own when its packages install TypeScript, else the image's) into a build dir, then `node --test` on its output",
			Named:      named(tsNamedScript),
			Compile:    tsCompile,
			IsTestFile: isTestFile,
		},
		Guide: `Language: TypeScript 4.9 (tsc) on Node.js 20. Keep a tsconfig.json at the root; when there is none, create {"compilerOptions": {"target": "ES2020", "module": "commonjs", "strict": true, "esModuleInterop": true}}.
` + depsGuide + ` Node's types (@types/node) are available; a package without its own types needs its @types package.
Tests: name test files *.test.ts next to the code. Write them with Node's built-in runner:
  import test from "node:test"; // or: import { describe, it } from "node:test";
  import assert from "node:assert/strict";
tsc compiles the project into a separate build directory and node --test runs the compiled tests there, so a type error fails the tests, and tests must find data files from the project root (process.cwd()), not from __dirname. If package.json has a "test" script, npm test runs the tests instead.`,
		Extensions: []string{".ts", ".mts", ".cts", ".tsx"},
		Failure:    failure,
		Policy:     lang.Policy{LineRules: policy.JavaScript},
		Deps:       deps,
		Sandbox: sandbox(jsPrewarm+` && printf 'export const w: number = 1;\n' > w.ts && tsc --noEmit w.ts`,
			sh(tsHostCheck),
			"apt-get install nodejs node-typescript node-undici, and Node's type declarations (the @types/node package) in /usr/local/lib/node_modules/@types or /usr/lib/node_modules/@types (npm install -g @types/node)"),
	}
}

// tsHostCheck finds tsc and Node's types on the host.
const tsHostCheck = `tsc --version || exit 1
for d in $(echo "` + typeRoots + `" | tr , ' '); do [ -d "$d/node" ] && exit 0; done
echo "no @types/node in ` + typeRoots + `"; exit 1`

// jsPrewarm runs one trivial node:test file: the first node start loads
// the runtime from disk.
const jsPrewarm = `printf 'require("node:test")("w", () => {});\n' > w.test.js && ` + nodeTest + ` >/dev/null`

// sandbox is the sandbox both languages share, but for their warm-up and
// host check.
func sandbox(prewarm string, hostCheck []string, install string) lang.Sandbox {
	return lang.Sandbox{
		Image: image,
		Env: map[string]string{
			// npm runs a project's test script and nothing else: no
			// registry, no update check, its cache in the writable /tmp.
			"npm_config_offline":         "true",
			"npm_config_update_notifier": "false",
			"npm_config_fund":            "false",
			"npm_config_audit":           "false",
			"npm_config_cache":           "/tmp/.npm",
			// Plain output for the parser: chalk (jest) and Node's
			// reporters both read it.
			"FORCE_COLOR": "0",
		},
		Recipe: recipe,
		// Debian's JavaScript packages (jest, tsc and the types) live in
		// /usr/share/nodejs.
		ToolchainDirs: append(slices.Clone(lang.DebianToolchainDirs), "/usr/share/nodejs"),
		Prewarm:       prewarm,
		HostPaths:     hostPaths,
		HostBin:       hostBin,
		HostCheck:     hostCheck,
		HostToolchain: "node",
		Install:       install,
	}
}

// recipe builds the image: Node 20, jest 29.6 and TypeScript 4.9.5 with
// Node's and Jest's types, which are Debian trixie's versions (bookworm
// has Node 18), so both builds run the same tools. The types go where a
// global npm install puts them, which is where tsc is told to look
// (typeRoots).
//
// Debian's npm 9.2 hands its proxy agents (7.x) the options of their 5.x
// API, in which the proxy's credentials are "auth": the 7.x agents read
// them from username and password only, and so never send them. The
// egress proxy wants them, so the offline build adds those two fields
// (the official image's npm bundles agents it calls rightly, and has no
// such file).
var recipe = lang.Recipe{
	Base:      "node:20-bookworm-slim",
	BaseSetup: "npm install -g jest@29.6.2 typescript@4.9.5 @types/node@20 @types/jest@29 && npm cache clean --force && rm -rf /root/.npm",
	Packages:  []string{"nodejs", "npm", "jest", "node-typescript", "node-undici"},
	Suite:     "trixie",
	// Debian's node is built without V8's startup snapshot and code
	// cache: a process takes 3-4 times as long to start, and node --test
	// starts one per test file. The offline image takes the host's Node 20
	// when it has them (hostNode).
	HostDirs: []lang.HostDir{{Find: hostNode, To: "/usr/local/bin", Optional: true}},
	Setup:    setup,
}

// setup links Node's and Jest's types where tsc finds them, and mends
// what of Debian's JavaScript packages the image runs: trixie's npm
// never sends a proxy's credentials (it hands its proxy agents options
// in a form they no longer read); and where the host's node stands in
// for Debian's, which it must run (or be removed), Debian's jest finds
// modules through its module paths and a build setting only Debian's
// node has, written in here.
const setup = `mkdir -p /usr/local/lib/node_modules/@types && for t in node jest; do
  [ -e /usr/local/lib/node_modules/@types/$t ] || ln -s /usr/share/nodejs/@types/$t /usr/local/lib/node_modules/@types/$t
done
agent=/usr/share/nodejs/npm/node_modules/make-fetch-happen/lib/agent.js
if [ -f $agent ]; then
  grep -q 'auth: getAuth(proxyUrl),$' $agent
  sed -i 's/auth: getAuth(proxyUrl),$/& username: proxyUrl.username, password: proxyUrl.password,/' $agent
fi
if [ -x /usr/bin/node ] && [ -x /usr/local/bin/node ]; then
  /usr/local/bin/node -e 0 || rm /usr/local/bin/node
fi
if [ -x /usr/bin/node ] && [ -x /usr/local/bin/node ]; then
  prefix=$(/usr/bin/node -p process.config.variables.node_prefix)
  rel=$(/usr/bin/node -p process.config.variables.node_relative_path)
  dirs=
  for d in $(echo "$rel" | tr : ' '); do
    [ -z "$(ls -A "$prefix/$d" 2>/dev/null)" ] || dirs="$dirs $prefix/$d"
  done
  set -- $dirs
  if [ $# -eq 1 ]; then
    ln -s "$1" /usr/local/lib/node
    grep -rlZ --include='*.js' -e process.config.variables.node_relative_path -e process.config.variables.node_prefix /usr/share/nodejs |
      xargs -0 -r sed -i "s|process\.config\.variables\.node_relative_path|'$rel'|g; s|process\.config\.variables\.node_prefix|'$prefix'|g"
  else
    echo "Debian's node has $# module directories, the host's one: the image keeps Debian's node" >&2
    rm /usr/local/bin/node
  fi
fi`

// nodeOnPath is the file of the node on PATH, links followed; "" when
// there is none.
func nodeOnPath() string {
	p, err := exec.LookPath("node")
	if err != nil {
		return ""
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return ""
	}
	return p
}

// hostNode is the host's node when it can stand in for Debian's in the
// offline image: Node 20, a build of its own (not on a shared libnode),
// with the startup snapshot and code cache; "" otherwise.
var hostNode = sync.OnceValue(func() string {
	p := nodeOnPath()
	if p == "" {
		return ""
	}
	v := "process.config.variables"
	out, err := exec.Command(p, "-p", `process.versions.node.split(".")[0]+" "+`+v+`.node_shared+" "+`+v+`.node_use_node_snapshot+" "+`+v+`.node_use_node_code_cache`).Output()
	if err != nil || strings.TrimSpace(string(out)) != "20 false true true" {
		return ""
	}
	return p
})

// hostNodeDir is the directory of the host's node when it is not in the
// system's bin directories (an install under /opt or a version manager's):
// bwrap then mounts its install root and puts it first on PATH. "" when
// node is a system one, or absent.
var hostNodeDir = sync.OnceValue(func() string {
	p := nodeOnPath()
	if p == "" {
		return ""
	}
	dir := filepath.Dir(p)
	if dir == "/usr/bin" || dir == "/bin" {
		return ""
	}
	return dir
})

func hostBin() []string {
	if d := hostNodeDir(); d != "" {
		return []string{d}
	}
	return nil
}

// hostPaths mounts the install root of a host node outside /usr (which
// bwrap shows anyway), with its global packages beside it.
func hostPaths() []string {
	d := hostNodeDir()
	if d == "" || strings.HasPrefix(d, "/usr/") {
		return nil
	}
	return []string{filepath.Dir(d)}
}

// testFileRe is the test file names of node --test and Jest: *.test.js,
// *.spec.ts, *_test.mjs, test-*.js, test.js.
var testFileRe = regexp.MustCompile(`(?:[.\-_](?:test|spec)|^test(?:-[^/]*)?)\.[cm]?[jt]sx?$`)

// isTestFile is what node --test and Jest find by default, with
// __tests__/ and test/ directories, and Jest's configuration, which
// decides what the tests are.
func isTestFile(p string) bool {
	base := path.Base(p)
	return testFileRe.MatchString(base) || strings.HasPrefix(base, "jest.config.") || lang.UnderTestDir(p)
}
