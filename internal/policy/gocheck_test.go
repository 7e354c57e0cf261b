package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

// brief renders findings as "file:line:rule", the part tests pin exactly.
func brief(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Rule))
	}
	return out
}

func mustAllow(t *testing.T, names ...string) Rules {
	t.Helper()
	r, err := DefaultRules().Allow(names...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckGo(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		allow []string
		want  []string // "line:rule"
	}{
		{"clean", `package p
import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)
func F(dir string) error {
	u, _ := url.Parse("http://x")
	fmt.Println(u)
	_, _ = os.ReadFile("/etc/hostname")
	_, _ = os.OpenFile("/etc/hostname", os.O_RDONLY, 0)
	return os.WriteFile(filepath.Join(dir, "out.txt"), nil, 0o644)
}`, nil, nil},
		{"process import", `package p
import "os/exec"
var _ = exec.Command`, nil, []string{"2:process"}},
		{"process os.StartProcess", `package p
import "os"
var _, _ = os.StartProcess("/bin/sh", nil, nil)`, nil, []string{"3:process"}},
		{"process syscall.Exec with native allowed", `package p
import "syscall"
func F() { _ = syscall.Exec("/bin/sh", nil, nil) }`, []string{Native}, []string{"3:process"}},
		{"network imports", `package p
import (
	"net"
	"net/http"
	"net/http/httptest"
	"golang.org/x/net/websocket"
	"net/netip"
)
var _ = net.Dial`, nil, []string{"3:network", "4:network", "6:network"}}, // httptest serves on loopback
		{"network tls dial", `package p
import "crypto/tls"
func F() { _, _ = tls.Dial("tcp", "x:443", nil) }
var _ tls.Config`, nil, []string{"3:network"}},
		{"dynamic plugin", `package p
import "plugin"
var _ = plugin.Open`, nil, []string{"2:dynamic"}},
		{"native", `package p
// #include <stdio.h>
import "C"
import (
	"unsafe"
	"syscall"
	"golang.org/x/sys/unix"
)
//go:linkname nanotime runtime.nanotime
func nanotime() int64
var _ = unsafe.Pointer(nil)`, nil, []string{"3:native", "5:native", "6:native", "7:native", "9:native"}},
		{"abs-write", `package p
import (
	"fmt"
	"os"
	"path/filepath"
	"io/ioutil"
)
const target = "/etc/cron.d/x"
func F(name string) {
	_ = os.WriteFile("/etc/passwd", nil, 0o644)
	_, _ = os.Create(filepath.Join("/root", name))
	_ = os.MkdirAll(target, 0o755)
	p := "/var/" + name
	_ = os.RemoveAll(p)
	_, _ = os.OpenFile("/tmp/log", os.O_WRONLY|os.O_CREATE, 0o644)
	_ = os.Rename("local", fmt.Sprintf("/usr/bin/%s", name))
	_ = ioutil.WriteFile("/x", nil, 0)
	_ = os.WriteFile("relative/out", nil, 0o644)
}`, nil, []string{"10:abs-write", "11:abs-write", "12:abs-write", "14:abs-write", "15:abs-write", "16:abs-write", "17:abs-write"}},
		{"aliases and dot imports", `package p
import (
	run "os/exec"
	sys "os"
	. "os"
)
func F() {
	_ = run.Command
	_, _ = sys.StartProcess("x", nil, nil)
	_ = WriteFile("/etc/passwd", nil, 0)
	_, _ = StartProcess("x", nil, nil)
}`, nil, []string{"3:process", "9:process", "10:abs-write", "11:process"}},
		{"everything allowed", `package p
import (
	"os"
	"os/exec"
	"net"
	"unsafe"
	"plugin"
)
var _ = os.WriteFile("/etc/passwd", nil, 0)`, Categories(), nil},
		{"only network allowed", `package p
import (
	"net"
	"os/exec"
)`, []string{Network}, []string{"4:process"}},
		{"syntax error keeps checking the partial file", `package p
import "os/exec"
func F( {
}`, nil, []string{"2:process", "3:syntax"}},
		{"syntax error in a clean file", "package p\nfunc F() {\n\treturn 1 +\n}\n", nil, []string{"4:syntax"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := []workspace.File{{Path: "p/p.go", Data: []byte(tt.src)}}
			got, err := CheckGo(files, mustAllow(t, tt.allow...), AllChanged())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{}
			for _, w := range tt.want {
				want = append(want, "p/p.go:"+w)
			}
			if !slices.Equal(brief(got), want) {
				t.Errorf("findings = %v, want %v\n%s", brief(got), want, Summary(got))
			}
		})
	}
}

func TestCheckGoFiles(t *testing.T) {
	files := []workspace.File{
		{Path: "main.go", Data: []byte("package main\nfunc main() {}\n")},
		{Path: "main_test.go", Data: []byte("package main\nimport \"os/exec\"\nvar _ = exec.Command\n")},
		{Path: "script.py", Data: []byte("import subprocess\n")},
		{Path: "README.md", Data: []byte("func (\n")},
		{Path: "a/bad.go", Data: []byte("package a\nfunc (\n")},
	}
	got, err := CheckGo(files, DefaultRules(), AllChanged())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/bad.go:2:syntax", "main_test.go:2:process"}
	if !slices.Equal(brief(got), want) {
		t.Errorf("findings = %v, want %v", brief(got), want)
	}
	for _, f := range got {
		if f.Message == "" {
			t.Errorf("finding %v has no message", f)
		}
	}
	if !strings.Contains(got[1].Message, `"os/exec"`) {
		t.Errorf("message %q does not name the import", got[1].Message)
	}

	_, err = CheckGo([]workspace.File{{Path: "../escape.go", Data: []byte("package x")}}, DefaultRules(), AllChanged())
	if !errors.Is(err, workspace.ErrUnsafePath) {
		t.Errorf("unsafe path error = %v, want ErrUnsafePath", err)
	}
}
