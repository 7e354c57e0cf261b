package policy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

func TestChangedSpans(t *testing.T) {
	tests := []struct {
		name, before, after string
		want                []Span
	}{
		{"same", "a\nb\n", "a\nb\n", []Span{}},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", []Span{{2, 2}}},
		{"lines added at the end", "a\n", "a\nb\nc\n", []Span{{2, 3}}},
		{"line deleted", "a\nb\nc\n", "a\nc\n", []Span{}},
		{"two places", "a\nb\nc\nd\ne\n", "a\nX\nc\nd\nY\ne\n", []Span{{2, 2}, {5, 5}}},
		// A copy of an existing line is still the attempt's line.
		{"a line copied", "x = __import__('a')\ny = 1\n", "x = __import__('a')\ny = 1\nx = __import__('a')\n", []Span{{3, 3}}},
		{"moved down", "a\nb\nc\n", "b\nc\na\n", []Span{{3, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := changedSpans([]byte(tt.before), []byte(tt.after)); !slices.Equal(got, tt.want) {
				t.Errorf("changedSpans = %v, want %v", got, tt.want)
			}
		})
	}
}

// userGo is a project file with the user's own process spawn at line 4.
const userGo = "package p\n\nimport \"os/exec\"\n\nvar Cmd = exec.Command\n\nfunc Add(a, b int) int { return a * b }\n"

// TestOnlyTheAttemptsLinesAreJudged: the user's untouched code, in an
// untouched file or in a file the attempt changed elsewhere, gives no
// finding; what the attempt added does, and so does a syntax error
// anywhere in a file it changed.
func TestOnlyTheAttemptsLinesAreJudged(t *testing.T) {
	before := []workspace.File{
		{Path: "p/p.go", Data: []byte(userGo)},
		{Path: "p/other.go", Data: []byte("package p\n\nimport \"net\"\n\nvar D = net.Dial\n")},
	}
	fixed := strings.Replace(userGo, "a * b", "a + b", 1)
	tests := []struct {
		name string
		pgo  string
		want []string
	}{
		{"a one-line fix elsewhere", fixed, nil},
		// The import is the user's: the new use is the finding.
		{"a new spawn", fixed + "\nvar Sh = exec.Command(\"sh\")\n", []string{"p/p.go:9:process"}},
		{"a syntax error", fixed + "\nfunc (\n", []string{"p/p.go:9:syntax"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := []workspace.File{before[1], {Path: "p/p.go", Data: []byte(tt.pgo)}, {Path: "p/new.go", Data: []byte("package p\n")}}
			got, err := CheckGo(after, DefaultRules(), Diff(before, after))
			if err != nil {
				t.Fatal(err)
			}
			if b := brief(got); !slices.Equal(b, tt.want) && len(b)+len(tt.want) > 0 {
				t.Errorf("findings = %v, want %v", b, tt.want)
			}
		})
	}
	// Without a project, every line is the attempt's.
	got, err := CheckGo(before, DefaultRules(), AllChanged())
	if err != nil || len(got) != 2 {
		t.Errorf("findings = %v, %v; want the imports of exec and net", brief(got), err)
	}
}

// TestGoTestsServeAndCallLocalhost: a Go test that serves and calls a
// handler through httptest and net/http is not a finding; the handler's
// package importing net/http is, and so is a test that calls another host.
func TestGoTestsServeAndCallLocalhost(t *testing.T) {
	files := []workspace.File{
		{Path: "api.go", Data: []byte("package api\n\nimport \"net/http\"\n\nfunc Handler() http.Handler { return http.NewServeMux() }\n")},
		{Path: "api_test.go", Data: []byte("package api\n\nimport (\n\t\"net\"\n\t\"net/http\"\n\t\"net/http/httptest\"\n\t\"testing\"\n)\n\nfunc TestGet(t *testing.T) {\n\tsrv := httptest.NewServer(Handler())\n\tdefer srv.Close()\n\t_, _ = http.Get(srv.URL + \"/items\")\n\t_, _ = net.Dial(\"tcp\", \"127.0.0.1:1\")\n\t_, _ = http.Get(\"http://localhost:8080/x\")\n}\n")},
		{Path: "remote_test.go", Data: []byte("package api\n\nimport (\n\t\"net/http\"\n\t\"testing\"\n)\n\nfunc TestRemote(t *testing.T) {\n\t_, _ = http.Get(\"https://api.example.com/items\")\n}\n")},
	}
	goFindings, err := CheckGo(files, DefaultRules(), AllChanged())
	if err != nil {
		t.Fatal(err)
	}
	lineFindings, err := CheckLines(files, DefaultRules(), DefaultLineRules(), AllChanged())
	if err != nil {
		t.Fatal(err)
	}
	got := brief(append(goFindings, lineFindings...))
	want := []string{"api.go:3:network", "remote_test.go:9:network"}
	if !slices.Equal(got, want) {
		t.Errorf("findings = %v, want %v", got, want)
	}
}

// TestPythonJudgesTheAttemptsLines: in a project whose own code imports
// dynamically and spawns processes, a one-line fix gives no finding, in
// deny mode too, and the tests run; a test that serves and calls
// localhost is not a finding; the attempt's own network server is.
func TestPythonJudgesTheAttemptsLines(t *testing.T) {
	more := "import subprocess\n\n\ndef add(a, b):\n    return a * b\n\n\nmod = __import__('json')\n"
	before := []workspace.File{{Path: "more.py", Data: []byte(more)}, {Path: "util.py", Data: []byte("import os\nos.system('true')\n")}}
	fixed := strings.Replace(more, "a * b", "a + b", 1)
	server := "import http.server\n\n\nclass H(http.server.BaseHTTPRequestHandler):\n    pass\n"
	test := "import threading\nimport urllib.request\nfrom http.server import HTTPServer\n\nfrom server import H\n\n\ndef test_get():\n    srv = HTTPServer(('127.0.0.1', 0), H)\n    urllib.request.urlopen('http://127.0.0.1:%d/' % srv.server_port)\n"
	next := []string{"python3", "-c", "print('tests ran')"}
	tests := []struct {
		name  string
		files map[string]string
		warn  bool
		want  []string
		ran   bool
	}{
		{"a one-line fix", map[string]string{"more.py": fixed}, false, nil, true},
		{"a new eval", map[string]string{"more.py": fixed + "x = eval('1')\n"}, false, []string{"more.py:9:dynamic"}, false},
		{"a server and its test", map[string]string{"more.py": fixed, "server.py": server, "test_server.py": test}, false, []string{"server.py:1:network", "server.py:4:network"}, false},
		{"a server and its test, warn", map[string]string{"more.py": fixed, "server.py": server, "test_server.py": test}, true, []string{"server.py:1:network", "server.py:4:network"}, true},
		{"a syntax error, warn", map[string]string{"more.py": fixed + "def (\n"}, true, []string{"more.py:9:syntax"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fixtures := map[string]string{"util.py": string(before[1].Data)}
			var after []workspace.File
			for p, d := range tt.files {
				fixtures[p] = d
				after = append(after, workspace.File{Path: p, Data: []byte(d)})
			}
			after = append(after, before[1])
			stdout, stderr, err := runChecked(t, PyCheck{Rules: DefaultRules(), Changes: Diff(before, after), Warn: tt.warn, Then: next}, fixtures)
			if err != nil {
				t.Fatalf("pycheck: %v\n%s", err, stderr)
			}
			findings, rest, err := SplitPythonFindings(stdout)
			if err != nil {
				t.Fatal(err)
			}
			if got := brief(findings); !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
				t.Errorf("findings = %v, want %v", got, tt.want)
			}
			if ran := rest == "tests ran\n"; ran != tt.ran {
				t.Errorf("the tests ran: %v, want %v (after the report: %q)", ran, tt.ran, rest)
			}
		})
	}
}

// TestLineRules: each language the rules know has findings for spawning
// processes, networking and deleting outside the project; every language
// for reading credentials; comments and tests calling localhost have none.
func TestLineRules(t *testing.T) {
	tests := []struct {
		path, src string
		want      []string // "line:rule"
	}{
		{"web/app.ts", "// child_process is not used here\nimport { execSync } from 'child_process';\nconst r = await fetch('https://x.test/');\nfs.rmSync('/var/data', {recursive: true});\n", []string{"2:process", "3:network", "4:abs-write"}},
		{"web/app.test.js", "const r = await fetch('http://localhost:3000/items');\nconst s = require('http');\n", nil},
		{"web/remote.test.js", "const r = await fetch('https://api.example.com/items');\n", []string{"1:network"}},
		{"src/main.rs", "use std::process::Command;\nuse std::net::TcpStream;\nfn main() { std::fs::remove_dir_all(\"/tmp/x\").unwrap(); }\n", []string{"1:process", "2:network", "3:abs-write"}},
		{"src/Main.java", "import java.net.Socket;\nclass Main { void f() throws Exception { new ProcessBuilder(\"ls\").start(); Files.delete(Paths.get(\"/etc/x\")); } }\n", []string{"1:network", "2:abs-write", "2:process"}},
		{"src/main.c", "#include <sys/socket.h>\nint main(void) { system(\"ls\"); unlink(\"/etc/passwd\"); return 0; }\n", []string{"1:network", "2:abs-write", "2:process"}},
		{"lib/x.hpp", "/* system(\"ls\") in a comment */\n", nil},
		{"keys.py", "import os\nkey = os.environ['AWS_SECRET_ACCESS_KEY']\nwith open(os.path.expanduser('~/.ssh/id_rsa')) as f:\n    pass\n", []string{"2:credentials", "3:credentials"}},
		{"keys.go", "package p\n\nimport \"os\"\n\nvar T = os.Getenv(\"GITHUB_TOKEN\")\n", []string{"5:credentials"}},
		{"README.md", "system(\"ls\")\nPut your key in ~/.ssh/id_rsa or OPENAI_API_KEY.\n", nil},
		{"blob.c", "\x00system(\"ls\");\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := CheckLines([]workspace.File{{Path: tt.path, Data: []byte(tt.src)}}, DefaultRules(), DefaultLineRules(), AllChanged())
			if err != nil {
				t.Fatal(err)
			}
			var b []string
			for _, f := range got {
				b = append(b, strconv.Itoa(f.Line)+":"+f.Rule)
				if f.Message == "" {
					t.Errorf("finding %v has no message", f)
				}
			}
			if !slices.Equal(b, tt.want) {
				t.Errorf("findings = %v, want %v\n%s", b, tt.want, Summary(got))
			}
		})
	}
	// A plug-in hands its rules in as a value; allowed categories stay quiet.
	kotlin := LineRules{Language: "Kotlin", Extensions: []string{".kt"}, Rules: []LineRule{{Category: Process, Pattern: `\bProcessBuilder\b`, Message: "spawns processes"}}}
	files := []workspace.File{{Path: "Main.kt", Data: []byte("val p = ProcessBuilder(\"ls\")\n")}}
	if got, _ := CheckLines(files, DefaultRules(), []LineRules{kotlin}, AllChanged()); len(got) != 1 {
		t.Errorf("a plug-in's rule: findings %v, want one", got)
	}
	if got, _ := CheckLines(files, mustAllow(t, Process), []LineRules{kotlin}, AllChanged()); len(got) != 0 {
		t.Errorf("an allowed category: findings %v, want none", got)
	}
	bad := LineRules{Language: "Bad", Rules: []LineRule{{Category: Process, Pattern: `(`, Message: "x"}}}
	if _, err := CheckLines(files, DefaultRules(), []LineRules{bad}, AllChanged()); err == nil {
		t.Error("a rule that does not compile gave no error")
	}
}
