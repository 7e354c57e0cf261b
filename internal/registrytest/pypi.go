// Package registrytest serves package registries on the loopback, over
// their real protocols, for tests of dependency installs.
package registrytest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// served is a registry's server on the loopback, which counts the
// packages it hands out.
type served struct {
	srv       *httptest.Server
	downloads atomic.Int32
}

// start serves h on l, or on the loopback when l is nil.
func (s *served) start(t testing.TB, l net.Listener, h http.Handler) {
	s.srv = httptest.NewUnstartedServer(h)
	if l != nil {
		s.srv.Listener.Close()
		s.srv.Listener = l
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
}

// Host is the registry's host:port.
func (s *served) Host() string {
	u, _ := url.Parse(s.srv.URL)
	return u.Host
}

// Downloads is how many packages (wheels, tarballs) the registry has
// handed out.
func (s *served) Downloads() int { return int(s.downloads.Load()) }

// PyIndex is a PEP 503 simple index of wheels, served on the loopback;
// it counts the wheels it hands out.
type PyIndex struct {
	served
	wheels map[string][]byte // file name → wheel
}

// NewPyIndex serves wheels (file name → contents) until the test ends.
func NewPyIndex(t testing.TB, wheels map[string][]byte) *PyIndex {
	return NewPyIndexOn(t, nil, wheels)
}

// NewPyIndexOn is NewPyIndex on the listener l (nil: the loopback), for
// clients that cannot reach this machine's loopback, containers among
// them.
func NewPyIndexOn(t testing.TB, l net.Listener, wheels map[string][]byte) *PyIndex {
	ix := &PyIndex{wheels: wheels}
	ix.start(t, l, http.HandlerFunc(ix.serve))
	return ix
}

// URL is the index's URL, as pip's --index-url takes it.
func (ix *PyIndex) URL() string { return ix.srv.URL + "/simple/" }

func (ix *PyIndex) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/simple/":
		w.Header().Set("Content-Type", "text/html")
		for name := range ix.wheels {
			project := strings.SplitN(name, "-", 2)[0]
			fmt.Fprintf(w, "<a href=\"/simple/%s/\">%s</a>\n", project, project)
		}
	case strings.HasPrefix(p, "/simple/"):
		project := strings.Trim(strings.TrimPrefix(p, "/simple/"), "/")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
		for name, data := range ix.wheels {
			if strings.SplitN(name, "-", 2)[0] == project {
				sum := sha256.Sum256(data)
				fmt.Fprintf(w, "<a href=\"/files/%s#sha256=%s\">%s</a>\n", name, hex.EncodeToString(sum[:]), name)
			}
		}
		fmt.Fprint(w, "</body></html>\n")
	case strings.HasPrefix(p, "/files/"):
		data, ok := ix.wheels[strings.TrimPrefix(p, "/files/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ix.downloads.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	default:
		http.NotFound(w, r)
	}
}

// PureWheel builds a pure-Python wheel of one module (name/__init__.py
// with src, its METADATA, WHEEL and RECORD) and returns its file name and
// contents.
func PureWheel(t testing.TB, name, version, src string) (string, []byte) {
	t.Helper()
	info := name + "-" + version + ".dist-info/"
	files := [][2]string{
		{name + "/__init__.py", src},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: autocoder-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f[1]))
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name + "-" + version + "-py3-none-any.whl", buf.Bytes()
}
