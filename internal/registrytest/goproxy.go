package registrytest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// GoModule is one version of a module a GoProxy serves.
type GoModule struct {
	Path    string // corp.test/greet (lower case: no case-encoding)
	Version string // v1.0.0
	// Files are the module's files by path (greet.go); go.mod is made
	// from Path.
	Files map[string]string
}

// GoProxy serves modules over the Go module proxy protocol (GOPROXY):
// $module/@v/list, $version.info, .mod and .zip. It counts the zips it
// hands out. It listens on an address of this host other than the
// loopback, as a private proxy on a company's network would: the go
// command never takes a loopback address through HTTP_PROXY, and a
// sandbox's loopback is its own.
type GoProxy struct {
	served
	files map[string][]byte // URL path → body
	sums  []string          // go.sum lines
}

// NewGoProxy serves mods until the test ends.
func NewGoProxy(t testing.TB, mods ...GoModule) *GoProxy {
	t.Helper()
	p := &GoProxy{files: map[string][]byte{}}
	lists := map[string][]string{}
	for _, m := range mods {
		gomod := []byte("module " + m.Path + "\n\ngo 1.21\n")
		files := map[string][]byte{"go.mod": gomod}
		for name, data := range m.Files {
			files[name] = []byte(data)
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		prefix := m.Path + "@" + m.Version + "/"
		zipped := map[string][]byte{}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			w, err := zw.Create(prefix + name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(files[name])
			zipped[prefix+name] = files[name]
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		info, _ := json.Marshal(map[string]any{"Version": m.Version, "Time": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		base := "/" + m.Path + "/@v/" + m.Version
		p.files[base+".info"] = info
		p.files[base+".mod"] = gomod
		p.files[base+".zip"] = buf.Bytes()
		lists[m.Path] = append(lists[m.Path], m.Version)
		p.sums = append(p.sums,
			fmt.Sprintf("%s %s %s", m.Path, m.Version, hash1(zipped)),
			fmt.Sprintf("%s %s/go.mod %s", m.Path, m.Version, hash1(map[string][]byte{"go.mod": gomod})))
	}
	for path, versions := range lists {
		p.files["/"+path+"/@v/list"] = []byte(strings.Join(versions, "\n") + "\n")
	}
	p.start(t, nonLoopback(t), http.HandlerFunc(p.serve))
	return p
}

// nonLoopback listens on the first IPv4 address of an interface that is
// up and not the loopback.
func nonLoopback(t testing.TB) net.Listener {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
				l, err := net.Listen("tcp", net.JoinHostPort(ip.IP.String(), "0"))
				if err == nil {
					return l
				}
			}
		}
	}
	t.Fatal("no network interface but the loopback to serve a Go module proxy on")
	return nil
}

// URL is the proxy's URL, as GOPROXY names it.
func (p *GoProxy) URL() string { return p.srv.URL }

// GoSum is the go.sum lines of every module served.
func (p *GoProxy) GoSum() string { return strings.Join(p.sums, "\n") + "\n" }

func (p *GoProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, ok := p.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, ".zip") {
		p.downloads.Add(1)
	}
	w.Write(body)
}

// hash1 is the go.sum hash ("h1:") of files by name: the SHA-256 of the
// lines "sha256-hex  name" of the sorted names.
func hash1(files map[string][]byte) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%x  %s\n", sha256.Sum256(files[name]), name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}
