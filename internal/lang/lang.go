// Package lang describes a programming language as autocoder needs it: how
// a project in it is recognised, how its tests run and fail, what the
// model is told about it, how its source is mapped and judged, and the
// sandbox it runs in. Each language is a value built by its own package
// under internal/lang/<name>; internal/lang/languages lists them.
//
// The generic packages (sandbox, signature, repomap, policy, integrity,
// activities) receive what they need of a language as values of the types
// here and never import a language package, so no import cycle can form
// and adding a language touches one folder and the list.
package lang

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Language is everything autocoder knows of one language.
type Language struct {
	// Name is the canonical name: the --lang value, the sandbox profile
	// and the key lessons are filed under ("python").
	Name string
	// Title is the name people read ("Python").
	Title string
	// Aliases are other names --lang accepts ("py"); names are compared
	// without case.
	Aliases []string

	Detect Detect
	Tests  Tests

	// Guide is what the model is told about the language: its version,
	// what it may use, how tests are written. It never promises a network.
	Guide string

	// Extensions are the language's source file endings (".py"), for
	// detection by majority and the policy's line rules.
	Extensions []string
	// Symbols extracts a file's top-level symbols for the repository map;
	// nil leaves the language's files to Universal Ctags.
	Symbols func(path string, src []byte) []Symbol
	// Failure reads a failing run's output; its zero value falls back to
	// the generic reading.
	Failure Failure
	// Policy is how the safety policy reads the language's source.
	Policy Policy

	// Sandbox is how its code runs, on either backend.
	Sandbox Sandbox

	// Deps is how the language's third-party dependencies are fetched.
	Deps Deps
}

// Deps is how a language's third-party dependencies are fetched.
type Deps struct {
	// Registries are the hosts the ecosystem's client fetches packages
	// from when nothing configures another, as the egress proxy's allow
	// rules (host, or host:port): only what the ecosystem documents as its
	// default. The user's own registries come from the configuration.
	Registries []string
	// Manifests are the files (paths from the project's root) that declare its
	// dependencies; their contents key the install's cache. Declares
	// reports whether they name any dependency at all (nil: whenever one
	// of them exists). Without Install the language installs nothing.
	Manifests []string
	Declares  func(manifests map[string][]byte) bool
	// KeyData, when set, is what of the manifest at path decides the
	// install, which keys its cache in the manifest's place (nil: all of
	// it), so that an edit the install does not read does not install
	// again; manifests are all of the project's, by path.
	KeyData func(path string, manifests map[string][]byte) []byte
	// Local, when set, names more files of the project an install reads,
	// from the manifests found so far (the go.mod of a module that go.mod
	// replaces with a directory of the project), or path.Match patterns of
	// them (crates/*/Cargo.toml for a workspace's glob): they are
	// manifests too where they exist, and it is asked again with them
	// until it names no new one.
	Local func(manifests map[string][]byte) []string
	// Install runs in the project's root, through the egress proxy, and
	// puts the dependencies in DepsDir; the test runs see that directory
	// read-only, with Env. The install runs with InstallEnv in Env's
	// place.
	Install    []string
	Env        map[string]string
	InstallEnv map[string]string
	// Warm, when set, runs once after an install has succeeded, over the
	// whole project, with the install writable and WarmEnv over Env, and
	// no network: it leaves in the install what makes the runs over it
	// faster. It never runs the project's code, and leaves nothing made
	// of it: the install serves other tasks. Go builds the installed
	// packages the project imports into DepsGoCache, which the runs then
	// seed their GOCACHE from. Whatever its outcome, the install stands: a
	// failed warm-up loses only what it would have left.
	Warm    []string
	WarmEnv map[string]string
	// InstallText is the install as the model reads it when it fails,
	// when Install says it badly (a script): "npm install".
	InstallText string
	// Link, when set, is a directory the install makes in DepsDir that
	// the runs see, read-only, at the same path in the project as well
	// ("node_modules": where Node looks for packages from every file of
	// the project, ESM imports and npm scripts' .bin included).
	Link string
	// HostEnv are variables of the ecosystem's own configuration on the
	// worker that its installs and adds take as they are there, each with
	// the command that prints it (go env GONOSUMDB: the private modules
	// the checksum database is not asked about); an empty value is left
	// out.
	HostEnv map[string][]string
	// IndexVar is the install's variable that names a registry's index
	// URL (PIP_INDEX_URL): set from the configuration when the user names
	// one for the language.
	IndexVar string
	// IndexEnv, when set, are more variables the install needs for the
	// configured index (pip's PIP_TRUSTED_HOST for one over plain HTTP).
	IndexEnv func(index string) map[string]string
	// Index, when set, reads the configured index ("" when none is) as
	// the install uses it: the value IndexVar gets and the URLs the egress
	// proxy lets the install reach. Its error says why no configured
	// registry can be reached through the proxy. nil: the index as it is.
	Index func(index string) (value string, urls []string, err error)
	// Required is set when a project that declares dependencies cannot
	// build without their install (Go, with no module proxy in the
	// sandbox): where installs are off, its check fails and says so,
	// instead of the toolchain's own puzzling error.
	Required bool
	// Versions is where the newest versions of the ecosystem's packages
	// are looked up.
	Versions Versions
	// Add is how the model adds a package mid-task; its zero value: it
	// edits the manifests itself.
	Add Add
}

// Add is how the model adds packages to a project with the ecosystem's
// own command (go get, npm install): the install tool. The command runs
// in the project's root as Install does, through the egress proxy to the
// same registries with the same environment, over a copy of the project
// it may write and a scratch lang.DepsDir for its caches. The files among
// Files that it changes become the project; the rest of what it leaves
// is not kept.
type Add struct {
	// Command is the command that adds pkgs, which dev marks as needed
	// only by the tests where the ecosystem keeps those apart. Its error
	// says why a spec is refused: each names a package of the registry
	// (with its version), never an option, a URL or a path (CheckPackages).
	Command func(pkgs []string, dev bool) ([]string, error)
	// Files are the manifests and lock files Command may change.
	Files []string
	// Example names a package as Command takes it ("requests==2.32.3").
	Example string
	// Guide is what the model is told of adding packages where it has the
	// install tool, after Language.Guide.
	Guide string
}

// maxPackages bounds the packages of one add, and maxSpec the length of
// one spec.
const (
	maxPackages = 20
	maxSpec     = 200
)

// CheckPackages refuses package specs an add must not pass on: none, too
// many or too long, an option (a leading '-'), or anything spec does not
// match; example is a spec that does.
func CheckPackages(pkgs []string, spec *regexp.Regexp, example string) error {
	if len(pkgs) == 0 {
		return fmt.Errorf("name at least one package, e.g. %q", example)
	}
	if len(pkgs) > maxPackages {
		return fmt.Errorf("%d packages in one call: at most %d", len(pkgs), maxPackages)
	}
	for _, p := range pkgs {
		switch {
		case len(p) > maxSpec:
			return fmt.Errorf("%q…: a package spec is at most %d bytes", p[:40], maxSpec)
		case strings.HasPrefix(strings.TrimSpace(p), "-"):
			return fmt.Errorf("%q is an option, not a package: name packages only (the registry and the command's options are the worker's)", p)
		case !spec.MatchString(p):
			return fmt.Errorf("%q is not a package as the registry names it: write a name and a version, e.g. %q (URLs, paths and options are not installed)", p, example)
		}
	}
	return nil
}

// Versions is a language's registry of package versions: the protocol it
// speaks and its documented default address. The versions package speaks
// the protocols; a zero API means the language has no registry.
type Versions struct {
	API VersionsAPI
	URL string
	// IndexAPI is the protocol of an index the user names instead of URL
	// (registries.index, or what Configured prints); "" is API.
	IndexAPI VersionsAPI
	// Configured is a command that prints the registry the ecosystem's
	// own configuration names (go env GOPROXY); its failure or empty
	// output leaves URL.
	Configured []string
}

// VersionsAPI names a registry protocol the versions package speaks.
type VersionsAPI string

const (
	// VersionsGoProxy is the Go module proxy protocol (@v/list, @latest),
	// over a GOPROXY list.
	VersionsGoProxy VersionsAPI = "goproxy"
	// VersionsPyPI is PyPI's JSON API (/pypi/<name>/json).
	VersionsPyPI VersionsAPI = "pypi"
	// VersionsSimple is the simple repository API of Python indexes: PEP
	// 691 JSON, or PEP 503 HTML.
	VersionsSimple VersionsAPI = "simple"
	// VersionsNpm is the npm registry's package document (dist-tags).
	VersionsNpm VersionsAPI = "npm"
	// VersionsCrates is Cargo's sparse index layout.
	VersionsCrates VersionsAPI = "crates"
	// VersionsMaven is a Maven repository's maven-metadata.xml.
	VersionsMaven VersionsAPI = "maven"
)

// DepsDir is where a sandbox run finds its project's installed
// dependencies.
const DepsDir = "/deps"

// DepsGoCache is the Go build cache an install's warm-up (Deps.Warm) may
// leave in DepsDir: the downloaded modules' packages only. A run over the install
// seeds its GOCACHE from it, laid over the image's (Sandbox.GoCache).
const DepsGoCache = DepsDir + "/gocache"

// IsTestSource reports a test file of the language's own source (not a
// fixture under tests/ or a test of another language): what tells that a
// project has tests its runner would run.
func (l Language) IsTestSource(p string) bool {
	if l.Tests.IsTestFile == nil || !l.Tests.IsTestFile(p) {
		return false
	}
	for _, ext := range l.Extensions {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// Detect says how a project or a task is recognised as the language's.
type Detect struct {
	// Markers are files at a project's root that mark it ("go.mod"); a
	// leading "*" matches any name with that ending ("*.csproj").
	Markers []string
	// Commands are the programs a test command names to run the
	// language's tests ("pytest", "cargo"): a project with two languages'
	// markers is the one its test command runs.
	Commands []string
	// Task matches a task text that asks for the language, case-insensitive
	// RE2 ("\\bgolang\\b|\\bin go\\b").
	Task string
	// Rank orders languages whose markers both match and whose test
	// command says nothing: higher wins (TypeScript's tsconfig.json over
	// JavaScript's package.json).
	Rank int
}

// Tests says how the language's tests run and which files they are.
type Tests struct {
	// Command is the default test command, run in the project's root,
	// and Describe what it does, in a few words for people (the README's
	// table of languages), when the command itself says it badly.
	Command  []string
	Describe string
	// Named returns the command that runs only the named tests, for a
	// plan step's check; nil when the language cannot select tests, and
	// then Compile judges the step.
	Named func(tests []string) ([]string, error)
	// Compile checks that the code and its tests build without running
	// them: what judges a plan step that names no tests. nil: nothing
	// runs (the language's syntax check already ran).
	Compile []string
	// ConfirmNamed is set for a runner that passes when no test matches
	// the names (go test -run): the check then confirms from the output
	// that each named test ran.
	ConfirmNamed bool
	// IsTestFile reports the language's test files by its conventions;
	// they are the user's tests the judge protects.
	IsTestFile func(path string) bool
}

// Failure reads a failing run's output.
type Failure struct {
	// Parse finds the failure's kind, shape and key lines, for the
	// error signature lessons are keyed by. A zero Finding means the
	// output was not understood, and the generic reading is used.
	Parse func(lines []string) Finding
	// Digest picks what matters from a long output before anything is
	// cut: the panic or fatal line, each failing test with its own
	// output, compiler errors with file:line. It returns "" when it finds
	// nothing, and the output's tail is kept.
	Digest func(output string) string
	// Failing are patterns whose first group names a failing test; an
	// empty group names none (a file that failed as a whole).
	Failing []*regexp.Regexp
}

// Finding is what a failure parser extracts.
type Finding struct {
	Kind  string   // "python:KeyError", "go:compile:undefined"
	Shape string   // the main message, normalized (signature.NormLine)
	Keys  []string // raw key lines, most important first
}

// Symbol is one top-level declaration of a file, or a member of a
// top-level class.
type Symbol struct {
	Kind   string // func, method, type, const, var, class, function, member, ...
	Name   string
	Parent string // the class a member belongs to; empty at top level
	Line   int
	Text   string // one line as the map shows it, e.g. "func (s *Store) Put(key string) error"
}

// Policy is how the safety policy reads a language's source: with one of
// the policy package's checkers that parse it, or by its line rules alone.
type Policy struct {
	Checker   Checker
	LineRules LineRules
}

// Checker names a checker of the policy package that parses a language's
// source and judges what it does.
type Checker string

const (
	// CheckerNone: the line rules alone.
	CheckerNone Checker = ""
	// CheckerGo parses Go with go/ast in the worker, before anything runs.
	CheckerGo Checker = "go"
	// CheckerPython parses Python with its own ast module, in the sandbox,
	// before the tests run in the same sandbox.
	CheckerPython Checker = "python"
)

// LineRules are one language's rules that match single lines of source.
// They are plain data, matched by the policy package.
type LineRules struct {
	Language string
	// Extensions are the file name endings the rules apply to (".rs");
	// none applies them to every file.
	Extensions []string
	// Comments are the prefixes of lines the rules skip ("//").
	Comments []string
	Rules    []LineRule
}

// LineRule is a denied construct in a category. Pattern is an RE2
// expression, matched against one line at a time.
type LineRule struct {
	Category string
	Pattern  string
	Message  string
}

// Sandbox is how a language's code runs: the docker image and the paths
// the bwrap backend shows of the host.
type Sandbox struct {
	// Env is the language's part of a run's environment; the backend adds
	// PATH, HOME and the temp dirs. Nothing comes from the worker's.
	Env map[string]string
	// Image is the docker image's default name, and Recipe how it is built.
	Image  string
	Recipe Recipe
	// ToolchainDirs are the image's directories the docker backend serves
	// from read-only volumes.
	ToolchainDirs []string
	// Prewarm is a shell snippet a pool's first sandbox runs before it
	// waits for input: a trivial test that loads the toolchain into the
	// caches. It leaves nothing in the workdir.
	Prewarm string
	// HostPaths are host directories the bwrap backend mounts read-only at
	// the same path, beyond the base system directories, and HostBin the
	// ones among them put first on PATH; "" entries mean not found.
	HostPaths func() []string
	HostBin   func() []string
	// HostCheck is a command the bwrap backend runs on the host once to
	// learn whether the language's toolchain is there, and Install what
	// tells a person how to add it ("apt-get install python3-pytest").
	HostCheck []string
	Install   string
	// HostToolchain is the host's program (found on HostBin, then the
	// base PATH) whose file names the toolchain a bwrap run gets, for
	// keeping installs made with one apart from another's ("python3":
	// compiled packages fit one interpreter); "" when installs do not
	// depend on it.
	HostToolchain string
	// GoCache, when set, is where a read-only pre-built Go build cache is
	// found in the sandbox; each run seeds its writable GOCACHE from it
	// (and from an install's DepsGoCache over it).
	// Recipe.Setup fills it: it runs with GOCACHE set to this directory in
	// the image, and to a cache of the worker's in the bwrap backend,
	// which runs it once on the host with the go in HostBin.
	GoCache string
}

// Recipe builds a language's sandbox image, from a registry or offline.
// Both builds share the same Setup and environment, so a run behaves the
// same in either image.
type Recipe struct {
	// Base is the official image a registry serves ("python:3.12-slim-bookworm"),
	// and BaseSetup the shell commands that complete it (pip install pytest).
	Base      string
	BaseSetup string
	// Packages are the Debian packages that give the same toolchain on
	// the offline base (a Debian minbase imported from the host's apt
	// mirror), shared by every language's image.
	Packages []string
	// Suite is the Debian release Packages come from when the base's
	// (bookworm) has them only in versions too old: the image is then the
	// shared base with those packages, and what they need, from the newer
	// release. "" is the base's own.
	Suite string
	// Setup runs last in both builds, as root, with the sandbox's
	// environment: pre-built caches and the like. It is a POSIX shell
	// script of any number of lines, run with sh -e.
	Setup string
	// HostDirs are copied from the worker's host into the offline image:
	// a toolchain Debian's packages give only in a version too old (Go),
	// or in a slower build (Node).
	HostDirs []HostDir
}

// HostDir is a directory, or a file, of the host the offline build copies.
type HostDir struct {
	// Find returns the directory or file on the host, "" when there is
	// none; the offline build then fails, naming Sandbox.Install, unless
	// the copy is Optional.
	Find func() string
	// To is the directory's path in the image, or the directory a file
	// goes into.
	To string
	// Skip are subdirectories, relative to it, left out: what the
	// sandbox never uses (a Go root's own tests).
	Skip []string
	// Optional copies only what is there: without it the image keeps
	// what its packages give.
	Optional bool
}

// DebianToolchainDirs hold the interpreters, compilers and shared libraries
// of an image (Debian's packages, and the official images' /usr/local).
// Not /usr as a whole: docker mounts its init binary under /usr/sbin.
var DebianToolchainDirs = []string{"/usr/bin", "/usr/lib", "/usr/local"}

// testDirs are directories whose every file belongs to the tests: the
// tests themselves, their fixtures and data.
var testDirs = map[string]bool{"tests": true, "test": true, "testdata": true, "__tests__": true}

// UnderTestDir reports a path under tests/, test/, testdata/, __tests__/
// or src/test/: what most languages' tests and fixtures live in.
func UnderTestDir(p string) bool {
	dirs := strings.Split(path.Dir(p), "/")
	for i, d := range dirs {
		if testDirs[d] || (d == "src" && i+1 < len(dirs) && dirs[i+1] == "test") {
			return true
		}
	}
	return false
}

// CommandLine is the default test command as one shell line, each word
// quoted where the shell would read it otherwise: what a person sees and
// what `sh -c` runs as the task's test command.
func (t Tests) CommandLine() string {
	words := make([]string, len(t.Command))
	for i, w := range t.Command {
		words[i] = shellWord(w)
	}
	return strings.Join(words, " ")
}

// shellWord quotes w for a POSIX shell unless it is made only of
// characters no shell gives a meaning to.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// Excerpt collects the lines of a failure digest within a byte budget.
type Excerpt struct {
	b   strings.Builder
	max int
}

// NewExcerpt holds at most max bytes.
func NewExcerpt(max int) *Excerpt { return &Excerpt{max: max} }

// Add appends lines while they fit; it reports whether all did.
func (e *Excerpt) Add(lines ...string) bool {
	for _, l := range lines {
		if e.b.Len()+len(l)+1 > e.max {
			return false
		}
		e.b.WriteString(l)
		e.b.WriteByte('\n')
	}
	return true
}

// String is the digest so far, without its last newline.
func (e *Excerpt) String() string { return strings.TrimSuffix(e.b.String(), "\n") }
