package egress

import (
	"context"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/testenv"
)

// TestGoDownloadsThroughProxy: the go command, as a sandbox's install
// would run it, downloads a module from the machine's Go module proxy
// through the egress proxy with the Go plug-in's default registries and
// real name resolution; every connection is in the task's record. The
// same download with the registries left out is refused.
func TestGoDownloadsThroughProxy(t *testing.T) {
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatal(err)
	}
	moduleProxy, _, _ := strings.Cut(strings.TrimSpace(string(out)), ",")
	u, err := url.Parse(moduleProxy)
	if err != nil || u.Host == "" {
		t.Skipf("GOPROXY %q names no proxy to download from", moduleProxy)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, moduleProxy+"/golang.org/x/sync/@v/list", nil)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	testenv.RequireService(t, "the Go module proxy "+moduleProxy, err)

	p, addr := startProxy(t, Config{})
	download := func(allow []string) (*Grant, error) {
		g := grant(t, p, "go-download", allow...)
		home := t.TempDir()
		cmd := exec.Command("go", "mod", "download", "-json", "golang.org/x/sync@v0.1.0")
		cmd.Dir = home
		cmd.Env = []string{"PATH=" + goPath(t), "HOME=" + home, "GOMODCACHE=" + home + "/mod", "GOFLAGS=-modcacherw",
			"GOTOOLCHAIN=local", "GOPROXY=" + moduleProxy, "HTTPS_PROXY=" + g.ProxyURL(addr), "HTTP_PROXY=" + g.ProxyURL(addr)}
		out, err := cmd.CombinedOutput()
		t.Logf("go mod download (allowed: %v): %v\n%s", allow, err, out)
		return g, err
	}
	allow := append([]string{u.Host}, golang.Language().Deps.Registries...)
	g, err := download(allow)
	if err != nil {
		t.Fatalf("download through the proxy: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, _, err := g.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var down int64
	for _, r := range recs {
		if r.Verdict != Allowed || r.TaskID != "go-download" || r.Addr == "" {
			t.Errorf("record %+v", r)
		}
		down += r.Down
	}
	if len(recs) == 0 || down < 1000 {
		t.Errorf("%d records, %d bytes down: the download did not go through the proxy", len(recs), down)
	}
	g, err = download(nil)
	if err == nil {
		t.Error("a download with nothing allowed succeeded")
	}
	if recs, _, _ := g.Close(ctx); len(recs) == 0 || recs[0].Verdict != Denied {
		t.Errorf("records of the refused download: %+v", recs)
	}
}

// goPath is a PATH holding the go command the tests run with.
func goPath(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	return p[:strings.LastIndex(p, "/")]
}
