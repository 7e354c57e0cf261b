package policy

import (
	"bytes"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/workspace"
)

// LineRules are one language's rules that match single lines of source
// (lang.LineRules): what a language without a checker of its own is
// judged by, and what every language shares.
type LineRules = lang.LineRules

// LineRule is a denied construct in a category, matched one line at a
// time (RE2: linear time on any input, so a hostile file cannot stall the
// check).
type LineRule = lang.LineRule

// absPath is a JavaScript string literal (quoted or a template) that
// starts at the root or the home directory.
const absPath = "[\"'`](?:/|~/)"

var cComments = []string{"//", "/*", "*"}

// DefaultLineRules are the rule sets of the languages autocoder has no
// checker for yet, and those every language shares.
func DefaultLineRules() []LineRules {
	return []LineRules{Shared, JavaScript, Rust, Java, C}
}

// Shared rules apply to every source file: reading credentials is never
// part of a program's job in the sandbox, whatever its language. (Prose,
// such as a README telling where keys go, is not judged.)
var Shared = LineRules{
	Language:   "any",
	Extensions: slices.Concat([]string{".py", ".go", ".sh", ".bash", ".rb", ".php"}, JavaScript.Extensions, Rust.Extensions, Java.Extensions, C.Extensions),
	Rules: []LineRule{
		{Category: Credentials, Pattern: `(?:~|\$HOME|/home/[^/"']+|/root)?/\.(?:ssh|aws|gnupg|kube|docker/config\.json|netrc|git-credentials|pypirc|npmrc)\b`, Message: "names a credential file"},
		{Category: Credentials, Pattern: `/etc/(?:shadow|gshadow|sudoers)\b`, Message: "names a system credential file"},
		{Category: Credentials, Pattern: `\b[A-Z][A-Z0-9_]*(?:_API_KEY|_SECRET_ACCESS_KEY|_SECRET_KEY|_ACCESS_TOKEN|_AUTH_TOKEN|_PASSWORD)\b|\b(?:AWS_ACCESS_KEY_ID|GITHUB_TOKEN|GH_TOKEN|NPM_TOKEN|PYPI_TOKEN|DATABASE_URL)\b`, Message: "reads a credential variable"},
	},
}

// JavaScript covers JavaScript and TypeScript.
var JavaScript = LineRules{
	Language:   "JavaScript/TypeScript",
	Extensions: []string{".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"},
	Comments:   cComments,
	Rules: []LineRule{
		{Category: Process, Pattern: `\b(?:child_process|worker_threads)\b|\b(?:execSync|execFileSync|spawnSync|fork)\s*\(|\bDeno\.(?:run|Command)\b|\bBun\.spawn`, Message: "spawns processes"},
		{Category: Network, Pattern: `['"](?:node:)?(?:net|http|https|http2|dgram|tls)['"]|\bfetch\s*\(|\bXMLHttpRequest\b|\bnew\s+WebSocket\b|['"](?:axios|node-fetch|got|ws|undici)['"]`, Message: "opens network connections"},
		{Category: Dynamic, Pattern: `\beval\s*\(|\bnew\s+Function\s*\(|['"](?:node:)?vm['"]`, Message: "evaluates code at run time"},
		{Category: Native, Pattern: `\bprocess\.(?:dlopen|binding|_linkedBinding)\s*\(|\brequire\s*\(\s*['"][^'"]+\.node['"]\s*\)|['"](?:ffi-napi|koffi)['"]`, Message: "loads native code"},
		{Category: AbsWrite, Pattern: `\b(?:rm|rmSync|rmdir|rmdirSync|unlink|unlinkSync|writeFile|writeFileSync|appendFile|appendFileSync)\s*\(\s*` + absPath, Message: "writes or deletes at an absolute path; stay inside the project"},
	},
}

// Rust source files.
var Rust = LineRules{
	Language:   "Rust",
	Extensions: []string{".rs"},
	Comments:   cComments,
	Rules: []LineRule{
		{Category: Process, Pattern: `\bstd::process\b|\bprocess::Command\b|\bCommand::new\s*\(`, Message: "spawns processes"},
		{Category: Network, Pattern: `\bstd::net\b|\b(?:TcpStream|TcpListener|UdpSocket)\b|\b(?:reqwest|hyper|ureq|tokio::net)\b`, Message: "opens network connections"},
		{Category: Native, Pattern: `\bunsafe\s*\{|\bextern\s+"C"`, Message: "bypasses memory safety or calls foreign code"},
		{Category: AbsWrite, Pattern: `\b(?:remove_file|remove_dir|remove_dir_all|write|create_dir_all|File::create)\s*\(\s*"(?:/|~/)`, Message: "writes or deletes at an absolute path; stay inside the project"},
	},
}

// Java source files.
var Java = LineRules{
	Language:   "Java",
	Extensions: []string{".java"},
	Comments:   cComments,
	Rules: []LineRule{
		{Category: Process, Pattern: `\bProcessBuilder\b|\bRuntime\.getRuntime\(\)\.exec\b`, Message: "spawns processes"},
		{Category: Network, Pattern: `\bjava\.net\b|\bjava\.net\.http\b|\b(?:Socket|ServerSocket|HttpURLConnection|HttpClient|DatagramSocket)\b`, Message: "opens network connections"},
		{Category: Dynamic, Pattern: `\bClass\.forName\s*\(|\bURLClassLoader\b|\bjavax\.script\b`, Message: "loads code at run time"},
		{Category: Native, Pattern: `\bSystem\.loadLibrary\b|\bnative\s+\w+\s*\(|\bsun\.misc\.Unsafe\b`, Message: "calls native code"},
		{Category: AbsWrite, Pattern: `\b(?:Files\.(?:delete|deleteIfExists|write|writeString|createFile|createDirectories)\s*\(\s*(?:Paths?\.(?:get|of)\s*\(\s*)?"(?:/|~/))|\bnew\s+File(?:OutputStream|Writer)?\s*\(\s*"/`, Message: "writes or deletes at an absolute path; stay inside the project"},
	},
}

// C covers C and C++.
var C = LineRules{
	Language:   "C/C++",
	Extensions: []string{".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx"},
	Comments:   cComments,
	Rules: []LineRule{
		{Category: Process, Pattern: `\b(?:system|popen|fork|vfork|execl|execlp|execle|execv|execvp|execve|posix_spawnp?)\s*\(`, Message: "spawns processes"},
		{Category: Network, Pattern: `#\s*include\s*<(?:sys/socket\.h|netinet/[a-z_]+\.h|arpa/inet\.h|netdb\.h|curl/curl\.h|winsock2?\.h)>|\b(?:socket|connect|bind|listen|getaddrinfo)\s*\(`, Message: "opens network connections"},
		{Category: Dynamic, Pattern: `\b(?:dlopen|dlsym|LoadLibrary[AW]?)\s*\(`, Message: "loads code at run time"},
		{Category: AbsWrite, Pattern: `\b(?:remove|unlink|rmdir|truncate)\s*\(\s*"/|\bfopen\s*\(\s*"/[^"]*"\s*,\s*"[wa+]|std::filesystem::remove(?:_all)?\s*\(\s*"/`, Message: "writes or deletes at an absolute path; stay inside the project"},
	},
}

// url finds URLs in a line, for the one network rule tests keep: tests
// may serve and call this machine, not another.
var url = regexp.MustCompile(`(?i)\b(?:https?|wss?|ftp)://(\[[0-9a-f:.]+\]|[a-z0-9_.-]+)`)

// loopback reports a host name that is this machine.
func loopback(host string) bool {
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "0.0.0.0" || host == "::" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckLines applies the rule sets to the files the changes judge, each
// set to the files with one of its extensions, and returns the findings
// on the attempt's lines. In test files, network rules give way to one
// rule: a literal address of another host. Serving and calling localhost
// is what a test of a server or a client does.
func CheckLines(files []workspace.File, rules Rules, sets []LineRules, changes Changes) ([]Finding, error) {
	compiled, err := compileSets(sets, rules)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, f := range files {
		if !changes.Judges(f.Path) || binary(f.Data) {
			continue
		}
		test := isTest(f.Path)
		for _, s := range compiled {
			if s.applies(f.Path) {
				out = append(out, s.check(f, test)...)
			}
		}
		if test && rules.Denies(Network) {
			out = append(out, remoteCalls(f)...)
		}
	}
	out = dedupe(changes.Keep(out))
	sortFindings(out)
	return out, nil
}

type compiledRule struct {
	LineRule
	re *regexp.Regexp
}

type compiledSet struct {
	LineRules
	rules []compiledRule
}

func compileSets(sets []LineRules, rules Rules) ([]compiledSet, error) {
	var out []compiledSet
	for _, s := range sets {
		c := compiledSet{LineRules: s}
		for _, r := range s.Rules {
			if !rules.Denies(r.Category) {
				continue
			}
			re, err := regexp.Compile(r.Pattern)
			if err != nil {
				return nil, fmt.Errorf("compile %s rule %q: %w", s.Language, r.Message, err)
			}
			c.rules = append(c.rules, compiledRule{r, re})
		}
		out = append(out, c)
	}
	return out, nil
}

func (s compiledSet) applies(p string) bool {
	if len(s.Extensions) == 0 {
		return true
	}
	for _, e := range s.Extensions {
		if strings.HasSuffix(p, e) {
			return true
		}
	}
	return false
}

func (s compiledSet) check(f workspace.File, test bool) []Finding {
	var out []Finding
	for i, line := range bytes.Split(f.Data, []byte("\n")) {
		trimmed := string(bytes.TrimSpace(line))
		if s.comment(trimmed) {
			continue
		}
		for _, r := range s.rules {
			if test && r.Category == Network {
				continue
			}
			if r.re.MatchString(trimmed) {
				out = append(out, Finding{File: f.Path, Line: i + 1, Rule: r.Category, Message: r.Message})
			}
		}
	}
	return out
}

func (s compiledSet) comment(line string) bool {
	for _, c := range s.Comments {
		if strings.HasPrefix(line, c) {
			return true
		}
	}
	return false
}

// remoteCalls finds literal addresses of other hosts in a test file.
func remoteCalls(f workspace.File) []Finding {
	var out []Finding
	for i, line := range bytes.Split(f.Data, []byte("\n")) {
		for _, m := range url.FindAllSubmatch(line, -1) {
			if host := string(m[1]); !loopback(host) {
				out = append(out, Finding{File: f.Path, Line: i + 1, Rule: Network,
					Message: fmt.Sprintf("calls %s from a test; tests may serve and call only this machine", host)})
				break
			}
		}
	}
	return out
}

// binary reports data with a NUL byte in its first 8000, as git decides:
// not source, whatever its name.
func binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// dedupe keeps one finding per file, line and rule, as the checkers do.
func dedupe(fs []Finding) []Finding {
	type key struct {
		file string
		line int
		rule string
	}
	seen := map[key]bool{}
	out := fs[:0]
	for _, f := range fs {
		k := key{f.File, f.Line, f.Rule}
		if !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	return out
}
