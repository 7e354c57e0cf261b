package versions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
)

// registry serves body at path with the media type, and 404 elsewhere,
// as the registries do; it counts the requests it answered.
type registry struct {
	*httptest.Server
	asked atomic.Int32
}

type page struct {
	mediaType, body string
	// accept, when set, must be in the request's Accept header.
	accept string
}

func serve(t *testing.T, pages map[string]page) *registry {
	t.Helper()
	r := &registry{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p, ok := pages[req.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, req)
			return
		}
		if p.accept != "" && !strings.Contains(req.Header.Get("Accept"), p.accept) {
			http.Error(w, "not acceptable", http.StatusNotAcceptable)
			return
		}
		r.asked.Add(1)
		w.Header().Set("Content-Type", p.mediaType)
		fmt.Fprint(w, p.body)
	}))
	t.Cleanup(r.Close)
	return r
}

func resolveOne(t *testing.T, r *Resolver, api lang.VersionsAPI, base, pkg string) Result {
	t.Helper()
	res := r.Resolve(context.Background(), Source{API: api, URL: base}, []string{pkg})
	if len(res) != 1 {
		t.Fatalf("%d results for one package", len(res))
	}
	return res[0]
}

func wantVersion(t *testing.T, res Result, want string) {
	t.Helper()
	if res.Err != nil || res.Version != want {
		t.Fatalf("%s: got %q (error %v), want %q", res.Package, res.Version, res.Err, want)
	}
}

func TestGoProxyListAndLatest(t *testing.T) {
	proxy := serve(t, map[string]page{
		// A capital letter travels as "!" and its lower case.
		"/github.com/!burnt!sushi/toml/@v/list": {mediaType: "text/plain", body: "v1.3.2\nv1.4.0\nv1.5.0-rc.1\nv1.10.0-alpha\n"},
		"/example.com/pre/@v/list":              {mediaType: "text/plain", body: "v0.1.0-beta.1\nv0.1.0-beta.2\n"},
		"/example.com/untagged/@v/list":         {mediaType: "text/plain", body: ""},
		"/example.com/untagged/@latest":         {mediaType: "application/json", body: `{"Version":"v0.0.0-20260101000000-abcdef123456","Time":"2026-01-01T00:00:00Z"}`},
	})
	r := &Resolver{}
	wantVersion(t, resolveOne(t, r, lang.VersionsGoProxy, proxy.URL, "github.com/BurntSushi/toml"), "v1.4.0")
	wantVersion(t, resolveOne(t, r, lang.VersionsGoProxy, proxy.URL, "example.com/pre"), "v0.1.0-beta.2")
	wantVersion(t, resolveOne(t, r, lang.VersionsGoProxy, proxy.URL, "example.com/untagged"), "v0.0.0-20260101000000-abcdef123456")
	if res := resolveOne(t, r, lang.VersionsGoProxy, proxy.URL, "example.com/missing"); !errors.Is(res.Err, ErrNotFound) {
		t.Errorf("a module the proxy lacks: %v, want ErrNotFound", res.Err)
	}
}

func TestGoProxyListFallsBackAsTheGoCommandDoes(t *testing.T) {
	good := serve(t, map[string]page{"/example.com/m/@v/list": {mediaType: "text/plain", body: "v1.0.0\n"}})
	empty := serve(t, nil) // 404 for everything
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	r := &Resolver{}
	for _, c := range []struct {
		list, want, registry string
	}{
		{empty.URL + "," + good.URL, "v1.0.0", good.URL},
		{broken.URL + "|" + good.URL, "v1.0.0", good.URL},
		{broken.URL + "," + good.URL, "", broken.URL},
	} {
		res := resolveOne(t, r, lang.VersionsGoProxy, c.list, "example.com/m")
		if res.Version != c.want || res.Registry != c.registry {
			t.Errorf("GOPROXY=%s: %q from %s (error %v), want %q from %s", c.list, res.Version, res.Registry, res.Err, c.want, c.registry)
		}
	}
	for _, list := range []string{"off", "direct"} {
		if res := resolveOne(t, r, lang.VersionsGoProxy, list, "example.com/m"); res.Err == nil || !strings.Contains(res.Err.Error(), "GOPROXY") {
			t.Errorf("GOPROXY=%s: %v, want an error that names GOPROXY", list, res.Err)
		}
	}
}

func TestPyPIJSONSkipsYankedAndPreReleases(t *testing.T) {
	pypi := serve(t, map[string]page{
		// The JSON API's shape (docs.pypi.org, "JSON API"): info, and
		// the files of each release.
		"/pypi/requests-toolbelt/json": {mediaType: "application/json", body: `{
			"info": {"name": "requests-toolbelt", "version": "2.1.0", "yanked": false},
			"releases": {
				"1.0.0": [{"filename": "requests_toolbelt-1.0.0-py3-none-any.whl", "yanked": false}],
				"2.0.1": [{"filename": "requests_toolbelt-2.0.1.tar.gz", "yanked": false},
				          {"filename": "requests_toolbelt-2.0.1-py3-none-any.whl", "yanked": false}],
				"2.1.0": [{"filename": "requests_toolbelt-2.1.0.tar.gz", "yanked": true, "yanked_reason": "broken"}],
				"2.2.0rc1": [{"filename": "requests_toolbelt-2.2.0rc1.tar.gz", "yanked": false}],
				"3.0.0": []
			}}`},
	})
	wantVersion(t, resolveOne(t, &Resolver{}, lang.VersionsPyPI, pypi.URL, "Requests_Toolbelt"), "2.0.1")
}

func TestSimpleIndexJSONAndHTML(t *testing.T) {
	const pep691 = "application/vnd.pypi.simple.v1+json"
	jsonIndex := serve(t, map[string]page{
		"/simple/my-pkg/": {mediaType: pep691, accept: pep691, body: `{
			"meta": {"api-version": "1.1"}, "name": "my-pkg", "versions": ["0.9", "1.0", "1.1", "2.0b1"],
			"files": [
				{"filename": "my_pkg-0.9.tar.gz", "url": "x", "hashes": {}},
				{"filename": "my_pkg-1.0-py3-none-any.whl", "url": "x", "hashes": {}, "yanked": false},
				{"filename": "my_pkg-1.1-py3-none-any.whl", "url": "x", "hashes": {}, "yanked": "a bad build"},
				{"filename": "my_pkg-2.0b1.tar.gz", "url": "x", "hashes": {}}
			]}`},
	})
	wantVersion(t, resolveOne(t, &Resolver{}, lang.VersionsSimple, jsonIndex.URL+"/simple/", "My.Pkg"), "1.0")

	// An index that only speaks PEP 503's HTML (PEP 592's data-yanked).
	htmlIndex := serve(t, map[string]page{
		"/simple/my-pkg/": {mediaType: "text/html", body: `<!DOCTYPE html><html><body>
			<a href="../../f/my-pkg-1.2.tar.gz#sha256=00">my-pkg-1.2.tar.gz</a>
			<a href="../../f/my_pkg-1.3-py3-none-any.whl#sha256=00" data-yanked="">my_pkg-1.3-py3-none-any.whl</a>
			<a href="../../f/my_pkg-1.10.0rc1.tar.gz#sha256=00">my_pkg-1.10.0rc1.tar.gz</a>
			<a href="../../f/my_pkg_extra-9.0.tar.gz#sha256=00">my_pkg_extra-9.0.tar.gz</a>
			</body></html>`},
	})
	wantVersion(t, resolveOne(t, &Resolver{}, lang.VersionsSimple, htmlIndex.URL+"/simple", "my-pkg"), "1.2")
}

func TestNpmDistTagsLatest(t *testing.T) {
	const install = "application/vnd.npm.install-v1+json"
	reg := serve(t, map[string]page{
		// The abbreviated package document (npm's registry API,
		// "package metadata"), which npm install asks for.
		"/left-pad": {mediaType: install, accept: install, body: `{
			"name": "left-pad", "modified": "2026-01-01T00:00:00.000Z",
			"dist-tags": {"latest": "1.4.0", "next": "2.0.0"},
			"versions": {"1.3.9": {"name": "left-pad", "version": "1.3.9"},
			             "1.4.0": {"name": "left-pad", "version": "1.4.0"},
			             "2.0.0": {"name": "left-pad", "version": "2.0.0"}}}`},
		"/@scope%2fthing": {mediaType: install, body: `{"name": "@scope/thing",
			"versions": {"0.1.0": {}, "0.2.0-rc.1": {}, "0.1.1": {}}}`},
	})
	wantVersion(t, resolveOne(t, &Resolver{}, lang.VersionsNpm, reg.URL, "left-pad"), "1.4.0")
	wantVersion(t, resolveOne(t, &Resolver{}, lang.VersionsNpm, reg.URL+"/", "@scope/thing"), "0.1.1")
}

func TestCratesSparseIndexSkipsYanked(t *testing.T) {
	line := func(v string, yanked bool) string {
		return fmt.Sprintf(`{"name":"serde","vers":%q,"deps":[],"cksum":"00","features":{},"yanked":%t,"v":2}`, v, yanked)
	}
	index := serve(t, map[string]page{
		"/config.json": {mediaType: "application/json", body: `{"dl":"http://127.0.0.1/api/v1/crates"}`},
		"/se/rd/serde": {mediaType: "text/plain", body: strings.Join([]string{
			line("1.0.9", false), line("1.0.10", false), line("1.0.11", true), line("1.1.0-alpha.1", false)}, "\n") + "\n"},
		"/3/s/syn": {mediaType: "text/plain", body: `{"name":"syn","vers":"2.0.1","deps":[],"cksum":"00","features":{},"yanked":false}` + "\n"},
		"/1/a":     {mediaType: "text/plain", body: `{"name":"a","vers":"0.0.1","deps":[],"cksum":"00","features":{},"yanked":true}` + "\n"},
	})
	r := &Resolver{}
	wantVersion(t, resolveOne(t, r, lang.VersionsCrates, "sparse+"+index.URL+"/", "Serde"), "1.0.10")
	wantVersion(t, resolveOne(t, r, lang.VersionsCrates, index.URL, "syn"), "2.0.1")
	if res := resolveOne(t, r, lang.VersionsCrates, index.URL, "a"); res.Err == nil || !strings.Contains(res.Err.Error(), "yanked") {
		t.Errorf("a crate whose every version is yanked: %q, %v; want an error saying so", res.Version, res.Err)
	}
}

func TestMavenMetadataNewestRelease(t *testing.T) {
	repo := serve(t, map[string]page{
		"/maven2/org/example/lib-core/maven-metadata.xml": {mediaType: "text/xml", body: `<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>org.example</groupId>
  <artifactId>lib-core</artifactId>
  <versioning>
    <latest>2.0.0-M1</latest>
    <release>2.0.0-M1</release>
    <versions>
      <version>1.9</version>
      <version>1.10.0</version>
      <version>2.0.0-M1</version>
      <version>2.1-SNAPSHOT</version>
    </versions>
    <lastUpdated>20260101000000</lastUpdated>
  </versioning>
</metadata>`},
	})
	wantVersion(t, resolveOne(t, &Resolver{}, lang.VersionsMaven, repo.URL+"/maven2", "org.example:lib-core"), "1.10.0")
	if res := resolveOne(t, &Resolver{}, lang.VersionsMaven, repo.URL, "lib-core"); res.Err == nil || !strings.Contains(res.Err.Error(), "GROUP:ARTIFACT") {
		t.Errorf("a name without its group: %v, want an error asking for GROUP:ARTIFACT", res.Err)
	}
}

func TestUnreachableRegistryIsAWarningPerPackage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	res := (&Resolver{}).Resolve(context.Background(), Source{API: lang.VersionsNpm, URL: closed}, []string{"a", "b"})
	for _, r := range res {
		if r.Version != "" || r.Err == nil || !strings.Contains(r.Err.Error(), "cannot reach the registry") {
			t.Errorf("%s from a closed port: %q, %v; want a warning that the registry cannot be reached", r.Package, r.Version, r.Err)
		}
	}

	// One registry that knows one of two packages answers that one.
	reg := serve(t, map[string]page{"/known": {mediaType: "application/json", body: `{"dist-tags":{"latest":"1.0.0"}}`}})
	res = (&Resolver{}).Resolve(context.Background(), Source{API: lang.VersionsNpm, URL: reg.URL}, []string{"unknown", "known"})
	if !errors.Is(res[0].Err, ErrNotFound) || res[1].Version != "1.0.0" {
		t.Errorf("got %+v, want unknown not found and known 1.0.0", res)
	}
}

func TestSourceOfPrefersTheUsersIndex(t *testing.T) {
	ctx := context.Background()
	py := lang.Versions{API: lang.VersionsPyPI, URL: "https://pypi.default", IndexAPI: lang.VersionsSimple}
	if got := SourceOf(ctx, py, ""); got != (Source{API: lang.VersionsPyPI, URL: "https://pypi.default"}) {
		t.Errorf("nothing configured: %+v, want the default JSON API", got)
	}
	if got := SourceOf(ctx, py, "http://127.0.0.1:9/simple"); got != (Source{API: lang.VersionsSimple, URL: "http://127.0.0.1:9/simple"}) {
		t.Errorf("registries.index: %+v, want the simple API at the index", got)
	}
	gop := lang.Versions{API: lang.VersionsGoProxy, URL: "https://proxy.default,direct", Configured: []string{"echo", "http://127.0.0.1:9|off"}}
	if got := SourceOf(ctx, gop, ""); got != (Source{API: lang.VersionsGoProxy, URL: "http://127.0.0.1:9|off"}) {
		t.Errorf("the ecosystem's own configuration: %+v, want what its command printed", got)
	}
	gop.Configured = []string{"false"}
	if got := SourceOf(ctx, gop, ""); got.URL != gop.URL {
		t.Errorf("a failing configuration command: %+v, want the default", got)
	}
}

// TestRegistryCredentialsStayHidden: a registry address with credentials
// is asked with them, but the result names it without them.
func TestRegistryCredentialsStayHidden(t *testing.T) {
	proxy := serve(t, map[string]page{"/example.com/m/@v/list": {mediaType: "text/plain", body: "v1.2.0\n"}})
	withCreds := strings.Replace(proxy.URL, "http://", "http://ci-bot:s3cret@", 1)
	res := resolveOne(t, &Resolver{}, lang.VersionsGoProxy, withCreds, "example.com/m")
	wantVersion(t, res, "v1.2.0")
	if strings.Contains(res.Registry, "s3cret") || strings.Contains(res.Registry, "ci-bot") {
		t.Errorf("the result names the registry with its credentials: %s", res.Registry)
	}
}
