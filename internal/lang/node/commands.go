package node

import (
	"regexp"
	"strings"
)

// The test commands are small shell scripts: what runs a JavaScript
// project's tests depends on the project (its own test script, Jest-style
// or node:test files) and on what the sandbox has (jest is in the image,
// not on every host), and only the sandbox knows both. Each script is
// built from the pieces below.

// testScriptOf sets $s to the test script of the project's package.json,
// empty when it has none.
const testScriptOf = `s=$(node -p 'try { require("./package.json").scripts.test || "" } catch (e) { "" }' 2>/dev/null)
`

// ownTestScript runs the project's own test script when its package.json
// has one; npm's placeholder ("no test specified") is none. A plain
// script runs as npm runs it, with sh -c in the project's root and
// node_modules/.bin first on the PATH, but without npm, whose start alone
// takes most of a second in a container. npm runs it when npm would add
// something: a pretest or posttest step, package.json's config, a project
// .npmrc (its node-options, script-shell...), or a script that names an
// npm_ variable. npm runs without the network (the sandbox's
// npm_config_offline).
const ownTestScript = `x=$(node -p 'try { const p = require("./package.json"); const s = p.scripts || {}; const t = s.test || ""; (s.pretest || s.posttest || p.config || /npm_/.test(t) ? "n" : "d") + t } catch (e) { "" }' 2>/dev/null)
s=${x#?}
[ -f .npmrc ] && x=n$s
case "$s" in
""|*"no test specified"*) ;;
*) case "$x" in d*) PATH="$PWD/node_modules/.bin:$PATH" exec sh -c "$s" ;; *) exec npm test ;; esac ;;
esac
`

// jestWanted succeeds when jest is installed and no JavaScript file of the
// project imports node:test: Jest-style tests (describe, it, expect as
// globals) are what most projects have.
const jestWanted = `command -v jest >/dev/null 2>&1 && ! grep -rqs --exclude-dir=node_modules --include='*.js' --include='*.cjs' --include='*.mjs' -e 'node:test' .`

// jestFunc defines jest_, jest in CI mode; a project with neither a
// package.json nor a jest.config gets an empty configuration, without
// which jest finds no root.
const jestFunc = `jest_() {
  if [ -f package.json ] || ls jest.config.* >/dev/null 2>&1; then jest --ci "$@"; else jest --ci --config '{}' "$@"; fi
}
`

// nodeTest is Node's own runner with the TAP reporter, the one Node 18
// and 20 both print when not on a terminal, written out so that the
// output the failure parser reads does not change with Node's default.
const nodeTest = `node --test --test-reporter=tap`

// typeRoots are where tsc finds type declarations: the project's own, and
// Node's (@types/node, and @types/jest in the image) where a global npm
// install puts them, in the image and on a host. Listing them replaces
// tsc's default, which would take every package of Debian's
// /usr/share/nodejs/@types, some of which do not compile.
const typeRoots = "./node_modules/@types,/usr/local/lib/node_modules/@types,/usr/lib/node_modules/@types"

// buildDir is where the TypeScript tests are compiled to, outside the
// project so that no compiled file joins it; they run from the project's
// root, as its own tests would.
const buildDir = "/tmp/tsbuild"

// tscFunc defines tsc_, tsc over the project: its tsconfig.json, or with
// strict CommonJS defaults over its .ts files when it has none. The
// project's own TypeScript, when its packages install one, else the
// image's. Type declarations are not checked themselves (skipLibCheck):
// checking Node's takes three times as long as a small project.
const tscFunc = `tsc_() {
  t=tsc; [ ! -x node_modules/.bin/tsc ] || t=./node_modules/.bin/tsc
  if [ -f tsconfig.json ]; then "$t" -p . --skipLibCheck --typeRoots ` + typeRoots + ` "$@"
  else "$t" --strict --target es2020 --module commonjs --esModuleInterop --skipLibCheck --typeRoots ` + typeRoots + ` $(find . -name node_modules -prune -o -name '*.ts' -print) "$@"; fi
}
`

// tsBuild compiles the project into buildDir, with source maps that node
// follows so that failures name the .ts files and lines; a type error
// stops the tests, as it stops a TypeScript project's own build. The
// project's node_modules shows in buildDir too: the compiled files import
// its packages from there.
const tsBuild = tscFunc + `rm -rf ` + buildDir + ` && tsc_ --noEmit false --sourceMap --outDir ` + buildDir + ` || exit 1
[ ! -d node_modules ] || { mkdir -p ` + buildDir + ` && ln -s "$PWD/node_modules" ` + buildDir + `/node_modules; } || exit 1
export NODE_OPTIONS=--enable-source-maps
`

// sh makes a script an argv; args become the script's $1, $2...
func sh(script string, args ...string) []string {
	return append([]string{"sh", "-c", script, "sh"}, args...)
}

// jsTestCmd runs a JavaScript project's tests: its own test script, else
// jest for Jest-style tests where jest is installed, else node --test.
var jsTestCmd = sh(ownTestScript + jestFunc +
	`if ` + jestWanted + `; then jest_; exit; fi
exec ` + nodeTest + "\n")

// ranOneFunc defines ran_one, which runs a command and fails it when it
// passed without running a test: a pattern that matches no test (one
// renamed, a file's name) must not pass a step. The count lines are
// node --test's TAP and spec summaries and jest's.
const ranOneFunc = `ran_one() {
  out=$("$@" 2>&1); st=$?
  printf '%s\n' "$out"
  if [ $st = 0 ] && ! printf '%s\n' "$out" | grep -Eq '^# pass [1-9]|^ℹ pass [1-9]|^Tests:.* [1-9][0-9]* passed'; then
    echo "no test matched the names asked for"; exit 1
  fi
  exit $st
}
`

// jsNamedScript runs the tests whose names match $1 with the runner
// jsTestCmd would pick, but for the project's own script, which cannot be
// told which tests to run: jest when the script or the files are
// Jest's, else node --test.
const jsNamedScript = testScriptOf + jestFunc + ranOneFunc + `case "$s" in
*jest*) ran_one jest_ -t "$1" ;;
""|*"no test specified"*) if ` + jestWanted + `; then ran_one jest_ -t "$1"; fi ;;
esac
ran_one ` + nodeTest + ` --test-name-pattern="$1"
`

// jsCompile checks the syntax of every JavaScript file of the project
// with node --check: JavaScript has no build, and this is what a step
// that names no tests is judged by.
var jsCompile = []string{"find", ".", "-name", "node_modules", "-prune", "-o", "-type", "f",
	"(", "-name", "*.js", "-o", "-name", "*.cjs", "-o", "-name", "*.mjs", ")",
	"-exec", "sh", "-c", `st=0; for f; do node --check "$f" || st=1; done; exit $st`, "sh", "{}", "+"}

// tsTestCmd runs a TypeScript project's tests: its own test script, else
// its node:test files compiled by tsc.
var tsTestCmd = sh(ownTestScript + tsBuild + `exec ` + nodeTest + ` ` + buildDir + "\n")

// tsNamedScript runs the compiled tests whose names match $1.
const tsNamedScript = tsBuild + ranOneFunc + `ran_one ` + nodeTest + ` --test-name-pattern="$1" ` + buildDir + `
`

// tsCompile type-checks the project and its tests without emitting.
var tsCompile = sh(tscFunc + `tsc_ --noEmit`)

// namePattern is one regular expression (JavaScript's syntax, which
// shares Go's escapes) that matches the named tests: each name's last
// part, at the end of the test's full name, which is how both jest -t and
// Node 20's --test-name-pattern see a nested test ("suite test"), and
// Node 18's its own name.
func namePattern(tests []string) string {
	var alts []string
	for _, t := range tests {
		if i := strings.LastIndex(t, " › "); i >= 0 {
			t = t[i+len(" › "):]
		}
		if t = strings.TrimSpace(t); t != "" {
			alts = append(alts, regexp.QuoteMeta(t))
		}
	}
	return "(?:" + strings.Join(alts, "|") + ")$"
}

// named builds a Tests.Named from a script that takes the pattern as $1.
// With no names, the step is judged by the compile check instead.
func named(script string) func([]string) ([]string, error) {
	return func(tests []string) ([]string, error) {
		if len(tests) == 0 {
			return nil, nil
		}
		return sh(script, namePattern(tests)), nil
	}
}
