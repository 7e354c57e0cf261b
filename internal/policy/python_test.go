package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
)

// The checker runs here with the host interpreter, but only over fixtures
// the tests write themselves; generated code is only ever checked inside the
// sandbox.

func hostPython(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		testenv.RequireService(t, "python3", err)
	}
	return p
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runScript runs the checker with args in a fresh directory holding the
// fixtures and returns its stdout, stderr and exit error.
func runScript(t *testing.T, fixtures map[string]string, args ...string) (string, string, error) {
	t.Helper()
	py := hostPython(t)
	dir := t.TempDir()
	writeTree(t, dir, fixtures)
	writeTree(t, dir, map[string]string{PyCheckPath: string(pycheckSource)})
	cmd := exec.Command(py, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// runChecked runs the checker PythonCheck sets up over the fixtures, the
// way the sandbox would.
func runChecked(t *testing.T, c PyCheck, fixtures map[string]string) (string, string, error) {
	t.Helper()
	var ws []workspace.File
	for p, data := range fixtures {
		ws = append(ws, workspace.File{Path: p, Data: []byte(data)})
	}
	files, argv := PythonCheck(c, ws)
	if argv[0] != "python3" {
		t.Fatalf("argv[0] = %q, want python3", argv[0])
	}
	all := map[string]string{}
	for _, f := range files {
		all[f.Path] = string(f.Data)
	}
	return runScript(t, all, argv[1:]...)
}

// runPyCheck runs the argv PythonCheck returns, the way the sandbox would,
// and parses its output.
func runPyCheck(t *testing.T, rules Rules, fixtures map[string]string) []Finding {
	t.Helper()
	stdout, stderr, err := runChecked(t, PyCheck{Rules: rules}, fixtures)
	if err != nil {
		t.Fatalf("pycheck: %v\n%s", err, stderr)
	}
	findings, err := ParsePythonFindings(stdout)
	if err != nil {
		t.Fatalf("ParsePythonFindings: %v\n%s", err, stdout)
	}
	return findings
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// pyCases are fixtures with the findings ("line:rule") every category
// denied must give.
var pyCases = []struct {
	file string
	src  string
	want []string
}{
	{"process_aliases.py", `import subprocess as sp
from os import system
import os
sp.run(["ls"])
system("ls")
os.popen("ls")
os.execvp("sh", ["sh"])
os.spawnl(os.P_WAIT, "/bin/sh")
import pty, multiprocessing
run = os.system
run("ls")
from asyncio import create_subprocess_exec
`, []string{"1:process", "2:process", "4:process", "5:process", "6:process", "7:process", "8:process", "9:process", "10:process", "11:process", "12:process"}},
	{"network.py", `import socket
from urllib.request import urlopen
from urllib.parse import urlparse
import http.client as hc
import requests, ftplib, smtplib
import asyncio
async def f():
    await asyncio.open_connection("x", 1)
urlparse("http://x")
import urllib
urllib.request.urlopen("http://x")
`, []string{"1:network", "2:network", "4:network", "5:network", "8:network", "11:network"}},
	{"asyncio_loop.py", `import asyncio
async def main():
    loop = asyncio.get_running_loop()
    await loop.create_connection(lambda: None, "example", 80)
    await asyncio.get_event_loop().create_datagram_endpoint(lambda: None)
    await loop.create_server(lambda: None, "0.0.0.0", 80)
    connect = loop.sock_connect
    await loop.subprocess_exec(lambda: None, "ls")
    await loop.subprocess_shell(lambda: None, "ls")
    await asyncio.create_subprocess_exec("ls")
    await asyncio.create_subprocess_shell("ls")
    await asyncio.open_connection("example", 80)
    await asyncio.start_server(None, "0.0.0.0", 80)
    from asyncio.streams import open_connection
`, []string{"4:network", "5:network", "6:network", "7:network", "8:process", "9:process", "10:process", "11:process",
		"12:network", "13:network", "14:network"}},
	{"log_handlers.py", `import logging, logging.handlers, logging.config
from logging.handlers import SysLogHandler as Sys, RotatingFileHandler
logging.handlers.SocketHandler("example", 9020)
logging.handlers.DatagramHandler("example", 9021)
logging.handlers.HTTPHandler("example", "/log")
logging.handlers.SMTPHandler("example", "a@b", ["c@d"], "s")
Sys()
logging.config.listen(9030)
RotatingFileHandler("app.log")
logging.getLogger().addHandler(logging.StreamHandler())
`, []string{"2:network", "3:network", "4:network", "5:network", "6:network", "7:network", "8:network"}},
	{"own_methods.py", `import mylib
mylib.create_server()
def create_connection(host):
    return host
create_connection("x")
`, nil},
	{"dynamic.py", `import os
eval("1")
exec("x = 1")
code = compile("1", "f", "eval")
m = __import__("os")
m.system("ls")
getattr(os, "system")("ls")
import importlib
importlib.import_module("socket")
import builtins
getattr(builtins, "eval")("1")
name = "sys" + "tem"
getattr(os, name)("ls")
e = __builtins__["exec"]
`, []string{"2:dynamic", "3:dynamic", "4:dynamic", "5:dynamic", "6:process", "7:process", "8:dynamic", "9:dynamic", "9:network", "11:dynamic", "13:dynamic", "14:dynamic"}},
	{"native.py", `import ctypes
from cffi import FFI
`, []string{"1:native", "2:native"}},
	{"abs_write.py", `import os, shutil, pathlib
from pathlib import Path
open("/etc/passwd", "w")
open("/etc/passwd", mode="a")
open("/etc/passwd").read()
open("out.txt", "w")
Path("/etc/motd").write_text("x")
shutil.rmtree("/")
os.makedirs("/opt/app")
target = pathlib.Path("/srv") / "data"
target.mkdir()
with open(os.path.join("/var", "log.txt"), "x") as f:
    pass
Path("data").write_text("ok")
Path("data") / "/etc/x"
(Path("data") / "/etc/x").touch()
`, []string{"3:abs-write", "4:abs-write", "7:abs-write", "8:abs-write", "9:abs-write", "11:abs-write", "12:abs-write", "16:abs-write"}},
	{"clean.py", `import re, json, os.path
from re import compile
pattern = compile(r"\d+")
def evaluate(expr):
    return expr
class Runner:
    def exec(self):
        return 1
Runner().exec()
print(json.dumps({"a": os.path.join("x", "y")}))
with open("/etc/hostname") as f:
    f.read()
`, nil},
	{"own_compile.py", `def compile(src):
    return src.upper()
compile("x")
`, nil},
	{"method_named_exec.py", `class A:
    def exec(self):
        pass
exec("1")
`, []string{"4:dynamic"}},
	{"syntax.py", "def f(:\n    pass\n", []string{"1:syntax"}},
	{"syntax_indent.py", "x = 1\nif x\n    pass\n", []string{"2:syntax"}},
	{"pkg/sub/deep.py", "import socket\n", []string{"1:network"}},
	{"pkg/__init__.py", "from . import sub\n", nil},
}

func pyFixtures() map[string]string {
	m := map[string]string{}
	for _, c := range pyCases {
		m[c.file] = c.src
	}
	return m
}

func TestPythonCheckCategories(t *testing.T) {
	allowSets := [][]string{nil, {Process}, {Network, Dynamic}, {Native, AbsWrite}, Categories()}
	for _, allow := range allowSets {
		t.Run("allow="+strings.Join(allow, ","), func(t *testing.T) {
			got := map[string][]string{}
			for _, f := range runPyCheck(t, mustAllow(t, allow...), pyFixtures()) {
				if f.Message == "" {
					t.Errorf("finding %v has no message", f)
				}
				got[f.File] = append(got[f.File], strconv.Itoa(f.Line)+":"+f.Rule)
			}
			for _, c := range pyCases {
				var want []string
				for _, w := range c.want {
					if !slices.Contains(allow, w[strings.Index(w, ":")+1:]) {
						want = append(want, w)
					}
				}
				if !slices.Equal(got[c.file], want) {
					t.Errorf("%s: findings = %v, want %v", c.file, got[c.file], want)
				}
				delete(got, c.file)
			}
			if len(got) != 0 {
				t.Errorf("findings in unexpected files (the checker itself?): %v", got)
			}
		})
	}
}

func TestPythonCheckCommand(t *testing.T) {
	rules := mustAllow(t, Network)
	planted := []workspace.File{{Path: "a.py"}, {Path: PyCheckPath, Data: []byte("x = 1\n")}, {Path: PyConfigPath, Data: []byte("{}")}}
	files, argv := PythonCheck(PyCheck{Rules: rules}, planted)
	if len(files) != 3 || files[0].Path != "a.py" {
		t.Fatalf("files %v: want a.py, the checker and its config, the workspace's own at those paths left out", files)
	}
	script, configFile := files[1], files[2]
	if _, err := workspace.CleanPath(script.Path); err != nil || script.Path != PyCheckPath {
		t.Errorf("script path %q: %v", script.Path, err)
	}
	if !bytes.Equal(script.Data, pycheckSource) {
		t.Error("script data differs from the embedded checker")
	}
	if !slices.Contains(argv, "-I") || !slices.Contains(argv, PyCheckPath) || argv[len(argv)-1] != PyConfigPath {
		t.Errorf("argv %q lacks -I, the script path or the config path", argv)
	}
	var config struct{ Deny []string }
	if err := json.Unmarshal(configFile.Data, &config); err != nil {
		t.Fatalf("config %q: %v", configFile.Data, err)
	}
	if !slices.Equal(config.Deny, rules.Denied()) {
		t.Errorf("config denies %v, want %v", config.Deny, rules.Denied())
	}
}

func TestPythonCheckConfig(t *testing.T) {
	fixtures := map[string]string{"a.py": "import socket\nimport subprocess\n"}
	configPath := ".autocoder/config.json"
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"no config denies all", nil, []string{"1:network", "2:process"}, ""},
		{"inline", []string{"--config", `{"deny":["process"]}`}, []string{"2:process"}, ""},
		{"file", []string{"--config-file", configPath}, []string{"1:network"}, ""},
		{"empty deny", []string{"--config", `{"deny":[]}`}, nil, ""},
		{"unknown category", []string{"--config", `{"deny":["process","disk"]}`}, nil, "unknown categories"},
		{"bad flag", []string{"--deny", "process"}, nil, "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := cloneMap(fixtures)
			fx[configPath] = `{"deny":["network"]}`
			stdout, stderr, err := runScript(t, fx, append([]string{"-I", "-B", PyCheckPath}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(stderr, tt.wantErr) {
					t.Fatalf("err = %v, stderr = %q, want failure mentioning %q", err, stderr, tt.wantErr)
				}
				if _, perr := ParsePythonFindings(stdout); !errors.Is(perr, ErrPyCheckOutput) {
					t.Errorf("output of a failed run parsed: %v", perr)
				}
				return
			}
			if err != nil {
				t.Fatalf("pycheck: %v\n%s", err, stderr)
			}
			findings, err := ParsePythonFindings(stdout)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range findings {
				got = append(got, strconv.Itoa(f.Line)+":"+f.Rule)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPythonOutputRoundTrip pins the wire format: every line the checker
// prints is a JSON object with exactly the Finding fields, or the final
// summary, and ParsePythonFindings returns the same findings.
func TestPythonOutputRoundTrip(t *testing.T) {
	stdout, stderr, err := runScript(t, pyFixtures(), "-I", "-B", PyCheckPath)
	if err != nil {
		t.Fatalf("pycheck: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var raw []Finding
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d %q: %v", i+1, line, err)
		}
		if i == len(lines)-1 {
			if m["done"] != true || m["findings"] != float64(len(lines)-1) {
				t.Fatalf("last line %q is not a matching summary", line)
			}
			continue
		}
		if len(m) != 4 {
			t.Errorf("line %q has fields other than file, line, rule, message", line)
		}
		raw = append(raw, Finding{File: m["file"].(string), Line: int(m["line"].(float64)), Rule: m["rule"].(string), Message: m["message"].(string)})
	}
	parsed, err := ParsePythonFindings(stdout)
	if err != nil {
		t.Fatal(err)
	}
	sortFindings(raw)
	if !slices.Equal(parsed, raw) || len(parsed) == 0 {
		t.Errorf("parsed %v\nwant %v", parsed, raw)
	}

	// Output cut short, as by a killed run or an output limit, is an error.
	cut := stdout[:strings.LastIndex(strings.TrimSuffix(stdout, "\n"), "\n")+1]
	if _, err := ParsePythonFindings(cut); !errors.Is(err, ErrPyCheckOutput) {
		t.Errorf("truncated output: error = %v, want ErrPyCheckOutput", err)
	}
}

func TestPythonCheckCapsOutput(t *testing.T) {
	src := strings.Repeat("eval('1')\n", 600)
	stdout, stderr, err := runScript(t, map[string]string{"many.py": src}, "-I", "-B", PyCheckPath)
	if err != nil {
		t.Fatalf("pycheck: %v\n%s", err, stderr)
	}
	findings, err := ParsePythonFindings(stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 500 || !strings.Contains(stdout, `"dropped": 100`) {
		t.Errorf("got %d findings, want 500 and 100 dropped", len(findings))
	}
}

func TestParsePythonFindingsErrors(t *testing.T) {
	finding := `{"file": "a.py", "line": 1, "rule": "dynamic", "message": "uses eval"}`
	done := func(n int) string {
		return `{"done": true, "files": 1, "findings": ` + strconv.Itoa(n) + `, "dropped": 0}`
	}
	tests := []struct {
		name string
		out  string
		want int // findings; -1 for ErrPyCheckOutput
	}{
		{"complete", finding + "\n" + done(1) + "\n", 1},
		{"no findings", done(0) + "\n", 0},
		{"empty", "", -1},
		{"no summary", finding + "\n", -1},
		{"count mismatch", finding + "\n" + done(2) + "\n", -1},
		{"line after summary", done(0) + "\n" + finding + "\n", -1},
		{"not json", "Traceback (most recent call last):\n", -1},
		{"unknown field", `{"file": "a.py", "line": 1, "rule": "x", "message": "m", "extra": 1}` + "\n" + done(1), -1},
		{"no rule", `{"file": "a.py", "line": 1, "message": "m"}` + "\n" + done(1), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePythonFindings(tt.out)
			if tt.want < 0 {
				if !errors.Is(err, ErrPyCheckOutput) {
					t.Errorf("error = %v, want ErrPyCheckOutput", err)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Errorf("got %v, %v; want %d findings", got, err, tt.want)
			}
		})
	}
}

// TestPythonCheckThen: a check without findings hands over to the next
// command after its report, without the checker in the directory; a check
// with findings never runs it.
func TestPythonCheckThen(t *testing.T) {
	next := []string{"python3", "-c", "import os; print('next sees', sorted(os.listdir('.')))"}
	for _, tc := range []struct {
		name, src string
		findings  int
		rest      string
	}{
		{"clean", "x = 1\n", 0, "next sees ['a.py']\n"},
		{"flagged", "import subprocess\n", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := runChecked(t, PyCheck{Rules: DefaultRules(), Then: next}, map[string]string{"a.py": tc.src})
			if err != nil {
				t.Fatalf("pycheck: %v\n%s", err, stderr)
			}
			findings, rest, err := SplitPythonFindings(stdout)
			if err != nil || len(findings) != tc.findings || rest != tc.rest {
				t.Errorf("findings %v, rest %q, err %v; want %d findings, rest %q", findings, rest, err, tc.findings, tc.rest)
			}
			if _, err := ParsePythonFindings(stdout); (err != nil) != (tc.rest != "") {
				t.Errorf("ParsePythonFindings: %v; want an error only for output after the report", err)
			}
		})
	}
}
