package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/testenv"
)

// probeScript runs in the sandbox and prints, as JSON, what each attempt
// to reach the world gave: "ok ..." or the error.
const probeScript = `
import json, os, socket, ssl, sys, urllib.request
reg, tls, other, addrs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
out = {}
def attempt(name, f):
    try:
        out[name] = "ok " + str(f())
    except Exception as e:
        out[name] = "error " + type(e).__name__ + ": " + str(e)
def fetch(url):
    body = urllib.request.urlopen(url, timeout=5, context=ssl._create_unverified_context()).read().decode()
    with open("fetched.txt", "a") as f:
        f.write(body + "\n")
    return body
def direct(addr):
    host, port = addr.rsplit(":", 1)
    socket.create_connection((host, int(port)), timeout=2).close()
    return "connected"
def no_token():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=2)
    s.sendall(("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (reg, reg)).encode())
    return s.recv(200).decode().split("\r\n")[0]
attempt("registry", lambda: fetch("http://%s/simple/" % reg))
attempt("registry-tls", lambda: fetch("https://%s/crates/" % tls))
attempt("other-through-proxy", lambda: fetch("http://%s/" % other))
for a in addrs:
    attempt("direct " + a, lambda: direct(a))
attempt("proxy-without-token", no_token)
attempt("write-root", lambda: open("/run/autocoder/x", "w"))
attempt("write-forwarder", lambda: open("/run/autocoder/egress-forward", "ab"))
attempt("host-env", lambda: os.environ["AUTOCODER_EGRESS_SECRET"])
attempt("uid", os.getuid)
print(json.dumps(out))
`

// egressRunner is a runner of the backend with the static forwarder and
// a warm pool, which egress runs must pass by: its sandboxes have no
// route.
func egressRunner(t *testing.T, backend string, profiles ...string) Runner {
	t.Helper()
	return egressRunnerWith(t, backend, testenv.Forwarder(t, false), profiles...)
}

func egressRunnerWith(t *testing.T, backend, fwd string, profiles ...string) Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := New(ctx, Config{Backend: backend, PoolSize: 1, Slots: 2, Profiles: testProfiles(profiles...), Warm: profiles, Forwarder: fwd})
	if err != nil {
		testenv.RequireService(t, backend+" backend", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// proxySocket serves p on a unix socket that sandbox users can reach.
func proxySocket(t *testing.T, p *egress.Proxy) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "autocoder-egress-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o755, sock: 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		<-done
	})
	return sock
}

type probe map[string]string

func (pr probe) ok(key string) bool { return strings.HasPrefix(pr[key], "ok ") }

func runProbe(t *testing.T, r Runner, spec Spec, reg, tls, other string, addrs []string) (probe, Result) {
	t.Helper()
	spec.Profile = "python"
	spec.Files = files("probe.py", probeScript)
	spec.Cmd = []string{"python3", "probe.py", reg, tls, other, strings.Join(addrs, ",")}
	spec.Collect = true
	spec.Limits = Limits{Timeout: 45 * time.Second}
	res := run(t, r, spec)
	if res.ExitCode != 0 {
		t.Fatalf("probe exited %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	var pr probe
	if err := json.Unmarshal([]byte(res.Stdout), &pr); err != nil {
		t.Fatalf("probe output %q: %v (stderr %s)", res.Stdout, err, res.Stderr)
	}
	return pr, res
}

// TestEgressReachesTheProxyAlone: a run with the egress network fetches
// from a registry the proxy lets through, and its connection is recorded
// under the task; it reaches nothing else: not a host service on the
// loopback, directly or through the proxy, not the host's other
// addresses (the docker bridge's gateway among them) where a service
// listens on all of them, not a public address, not the proxy without
// the grant's token. A run without network reaches not even the proxy.
func TestEgressReachesTheProxyAlone(t *testing.T) {
	index := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "registry index "+r.URL.Path)
	})
	registry := httptest.NewServer(index)
	t.Cleanup(registry.Close)
	tlsRegistry := httptest.NewTLSServer(index)
	t.Cleanup(tlsRegistry.Close)
	reg, tls := registry.Listener.Addr().String(), tlsRegistry.Listener.Addr().String()
	// A host service on every host address, the loopback and the docker
	// bridge's gateway among them; it fails the test if anything reaches it.
	port, hosts := hostListener(t)
	other := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var addrs []string
	for _, h := range hosts {
		addrs = append(addrs, net.JoinHostPort(h, strconv.Itoa(port)))
	}
	addrs = append(addrs, "1.1.1.1:80", "8.8.8.8:53")

	t.Setenv("AUTOCODER_EGRESS_SECRET", "host secret")

	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := egressRunner(t, backend, "python")
			waitWarm(t, r)
			p, err := egress.New(egress.Config{Registries: []string{reg, tls}})
			if err != nil {
				t.Fatal(err)
			}
			sock := proxySocket(t, p)
			g, err := p.Grant("task-"+backend, nil)
			if err != nil {
				t.Fatal(err)
			}
			pr, res := runProbe(t, r, Spec{Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g}}, reg, tls, other, addrs)
			t.Logf("with egress: %v", pr)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			recs, _, err := g.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if pr["registry"] != "ok registry index /simple/" {
				t.Errorf("registry through the proxy: %s", pr["registry"])
			}
			if pr["registry-tls"] != "ok registry index /crates/" {
				t.Errorf("registry through a CONNECT tunnel: %s", pr["registry-tls"])
			}
			if len(res.Files) != 2 || res.Files[0].Path != "fetched.txt" || string(res.Files[0].Data) != "registry index /simple/\nregistry index /crates/\n" {
				t.Errorf("the files the run wrote: %+v", res.Files)
			}
			if !strings.Contains(pr["other-through-proxy"], "403") {
				t.Errorf("a host service through the proxy: want 403, got %s", pr["other-through-proxy"])
			}
			if !strings.Contains(pr["proxy-without-token"], "407") {
				t.Errorf("the proxy without the token: want 407, got %s", pr["proxy-without-token"])
			}
			if pr["uid"] == "ok 0" || !pr.ok("uid") {
				t.Errorf("the run's user: %s", pr["uid"])
			}
			for _, k := range append([]string{"write-root", "write-forwarder", "host-env"}, prefixed("direct ", addrs)...) {
				if pr.ok(k) || pr[k] == "" {
					t.Errorf("%s: want no route, got %q", k, pr[k])
				}
			}
			for _, want := range []struct{ method, addr string }{{http.MethodGet, reg}, {http.MethodConnect, tls}} {
				if !recorded(recs, g.TaskID, want.method, want.addr) {
					t.Errorf("no allowed %s of %s under %s: %+v", want.method, want.addr, g.TaskID, recs)
				}
			}

			res = run(t, r, Spec{Profile: "python", Cmd: sh("exit 7"), Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g}})
			if res.ExitCode != 7 {
				t.Errorf("the command's exit status through the forwarder: want 7, got %d (%s)", res.ExitCode, res.Stderr)
			}

			none, _ := runProbe(t, r, Spec{}, reg, tls, other, addrs)
			t.Logf("without network: %v", none)
			for k, v := range none {
				if strings.HasPrefix(v, "ok ") && k != "uid" {
					t.Errorf("without network, %s: %s", k, v)
				}
			}
		})
	}
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// recorded reports whether recs hold an allowed connection of the task
// to addr that carried bytes back.
func recorded(recs []egress.Record, taskID, method, addr string) bool {
	for _, rec := range recs {
		if rec.TaskID == taskID && rec.Method == method && net.JoinHostPort(rec.Host, strconv.Itoa(rec.Port)) == addr && rec.Verdict == egress.Allowed && rec.Down > 0 {
			return true
		}
	}
	return false
}

// TestEgressSpecRefused: an egress run without what it needs is an
// invalid spec, caught before anything starts.
func TestEgressSpecRefused(t *testing.T) {
	p, err := egress.New(egress.Config{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Grant("task", nil)
	if err != nil {
		t.Fatal(err)
	}
	sock := proxySocket(t, p)
	fwd := &forwarder{path: "/fwd"}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		forwarder *forwarder
		spec      Spec
		want      string
	}{
		{"unknown network", fwd, Spec{Network: "host"}, `network "host"`},
		{"no forwarder", nil, Spec{Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g}}, "Config.Forwarder"},
		{"no grant", fwd, Spec{Network: NetworkEgress, Egress: Egress{Socket: sock}}, "grant"},
		{"relative socket", fwd, Spec{Network: NetworkEgress, Egress: Egress{Socket: "proxy.sock", Proxy: g}}, "absolute"},
		{"missing socket", fwd, Spec{Network: NetworkEgress, Egress: Egress{Socket: sock + ".gone", Proxy: g}}, "no such file"},
		{"not a socket", fwd, Spec{Network: NetworkEgress, Egress: Egress{Socket: plain, Proxy: g}}, "not a socket"},
		{"missing CA bundle", fwd, Spec{Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g, CABundle: plain + ".gone"}}, "CA bundle"},
		{"CA bundle not a file", fwd, Spec{Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g, CABundle: filepath.Dir(plain)}}, "CA bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Profile, tc.spec.Cmd = "python", sh("true")
			_, err := prepare(newProfileSet(testProfiles("python")), tc.forwarder, tc.spec)
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want ErrInvalidSpec saying %q, got %v", tc.want, err)
			}
		})
	}
	j, err := prepare(newProfileSet(testProfiles("python")), fwd, Spec{Profile: "python", Cmd: sh("true"), Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(j.route.env, "HTTPS_PROXY="+g.ProxyURL(EgressListen)) || !slices.Contains(j.route.env, "NO_PROXY=") {
		t.Errorf("the run's proxy variables: %v", j.route.env)
	}
}

// TestForwarderOfAnyLinking: a static forwarder is mounted alone and
// started as itself; a dynamically linked one (/bin/sh here) comes with
// its loader and every library it needs, resolved on the host, and starts
// through that loader. What the sandbox's user could not read or run, or
// is no executable, is refused.
func TestForwarderOfAnyLinking(t *testing.T) {
	static, err := newForwarder(testenv.Forwarder(t, false))
	if err != nil {
		t.Fatalf("the static forwarder: %v", err)
	}
	if got := static.command(); !slices.Equal(got, []string{egressForwarder}) || len(static.mounts()) != 1 {
		t.Errorf("the static forwarder starts as %v with mounts %v", got, static.mounts())
	}

	dyn, err := newForwarder("/bin/sh")
	if err != nil {
		t.Fatalf("a dynamic forwarder: %v", err)
	}
	t.Logf("/bin/sh: %v", dyn.mounts())
	cmd := dyn.command()
	if len(cmd) != 4 || cmd[0] != egressLibDir+"/"+dyn.loader[1] || cmd[1] != "--library-path" || cmd[2] != egressLibDir || cmd[3] != egressForwarder {
		t.Errorf("a dynamic forwarder starts as %v", cmd)
	}
	targets := map[string]string{}
	for _, m := range dyn.mounts() {
		targets[m[1]] = m[0]
	}
	if real, _ := filepath.EvalSymlinks("/bin/sh"); targets[egressForwarder] != real || targets[cmd[0]] == "" || targets[egressLibDir+"/libc.so.6"] == "" {
		t.Errorf("a dynamic forwarder's mounts: %v", dyn.mounts())
	}
	for target, src := range targets {
		if fi, err := os.Lstat(src); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is mounted from %s, not a regular file (%v)", target, src, err)
		}
	}

	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	private := filepath.Join(dir, "private")
	data, err := os.ReadFile(testenv.Forwarder(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(private, data, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{script, "Linux executable"},
		{private, "not readable by other users"},
		{"egress-forward", "absolute"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		if _, err := newForwarder(tc.path); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want ErrInvalidSpec saying %q, got %v", tc.path, tc.want, err)
		}
	}
	if _, err := New(context.Background(), Config{Backend: "bwrap", Profiles: testProfiles("python"), Forwarder: "/nonexistent/egress-forward"}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("a missing forwarder: %v", err)
	}
}

// TestDynamicForwarderRuns: the forwarder built with cgo, dynamically
// linked, carries an egress run's request to the proxy and its command's
// exit status back, on both backends, through the host's loader and
// libraries mounted into the sandbox.
func TestDynamicForwarderRuns(t *testing.T) {
	fwd := testenv.Forwarder(t, true)
	if fw, err := newForwarder(fwd); err != nil || fw.loader[0] == "" {
		t.Fatalf("the forwarder built with cgo is not dynamically linked: %+v %v", fw, err)
	}
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "registry index "+r.URL.Path)
	}))
	t.Cleanup(registry.Close)
	reg := registry.Listener.Addr().String()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := egressRunnerWith(t, backend, fwd)
			p, err := egress.New(egress.Config{Registries: []string{reg}})
			if err != nil {
				t.Fatal(err)
			}
			sock := proxySocket(t, p)
			g, err := p.Grant("task-"+backend, nil)
			if err != nil {
				t.Fatal(err)
			}
			res := run(t, r, Spec{Profile: "python", Network: NetworkEgress, Egress: Egress{Socket: sock, Proxy: g},
				Cmd: []string{"python3", "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()); sys.exit(7)",
					"http://" + reg + "/simple/"}})
			if res.ExitCode != 7 || strings.TrimSpace(res.Stdout) != "registry index /simple/" {
				t.Errorf("through the dynamic forwarder: exit %d, stdout %q, stderr %s", res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}

// hostCABundle is the CAs this host trusts, Debian's bundle.
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// TestEgressGoModDownload: the go command in a sandbox downloads a module
// from the Go module proxy through the egress route, with the Go
// plug-in's default registries as the grant's allow rules, over real
// HTTPS (CONNECT tunnels); each connection is in the task's record. The
// run trusts the host's CA bundle, as a site whose TLS goes through an
// inspecting gateway configures it (egress.ca_bundle); without it such a
// site's downloads fail on the certificate.
func TestEgressGoModDownload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://proxy.golang.org/golang.org/x/sync/@v/list", nil)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	testenv.RequireService(t, "the Go module proxy", err)

	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			r := egressRunner(t, backend, "go")
			p, err := egress.New(egress.Config{})
			if err != nil {
				t.Fatal(err)
			}
			sock := proxySocket(t, p)
			g, err := p.Grant("go-"+backend, golang.Language().Deps.Registries)
			if err != nil {
				t.Fatal(err)
			}
			route := Egress{Socket: sock, Proxy: g, CABundle: hostCABundle}
			res := run(t, r, Spec{Profile: "go", Network: NetworkEgress, Egress: route, Limits: Limits{Timeout: 45 * time.Second},
				Cmd: sh("GOPROXY=https://proxy.golang.org GOSUMDB=sum.golang.org GOFLAGS=-modcacherw go mod download -json golang.org/x/sync@v0.1.0 && ls $GOMODCACHE/golang.org/x/")})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			recs, _, err := g.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "sync@v0.1.0") {
				t.Fatalf("go mod download exited %d:\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
			}
			var down int64
			for _, rec := range recs {
				if rec.TaskID != g.TaskID || rec.Method != http.MethodConnect || rec.Verdict != egress.Allowed {
					t.Errorf("record %+v", rec)
				}
				down += rec.Down
			}
			if down < 10000 {
				t.Errorf("%d bytes down in %d records: the module did not come through the proxy", down, len(recs))
			}
		})
	}
}
