package registrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// Crate is one version of a crate a CargoRegistry serves.
type Crate struct {
	Name    string
	Version string
	// Lib is its src/lib.rs.
	Lib string
	// Deps are the crates it depends on, by name, with their version
	// requirements ("^1.0").
	Deps map[string]string
}

// CargoRegistry serves crates over Cargo's sparse registry protocol, on
// the loopback: config.json, whose dl names the downloads, the index
// files at their sharded paths (1/a, 2/ab, 3/a/abc, ab/cd/abcd), one
// JSON line per version with the .crate's sha256 and its dependencies,
// and the .crate files, gzipped tars of name-version/. It counts the
// crates it hands out.
type CargoRegistry struct {
	served
	index  map[string][]byte // index path → lines
	crates map[string][]byte // name/version → .crate
}

// NewCargoRegistry serves crates until the test ends.
func NewCargoRegistry(t testing.TB, crates ...Crate) *CargoRegistry {
	t.Helper()
	r := &CargoRegistry{index: map[string][]byte{}, crates: map[string][]byte{}}
	r.start(t, nil, http.HandlerFunc(r.serve))
	for _, c := range crates {
		data := crateFile(t, c)
		r.crates[c.Name+"/"+c.Version] = data
		sum := sha256.Sum256(data)
		deps := []map[string]any{}
		for _, name := range sortedKeys(c.Deps) {
			deps = append(deps, map[string]any{"name": name, "req": c.Deps[name], "features": []string{},
				"optional": false, "default_features": true, "target": nil, "kind": "normal"})
		}
		line, err := json.Marshal(map[string]any{"name": c.Name, "vers": c.Version, "deps": deps,
			"cksum": hex.EncodeToString(sum[:]), "features": map[string][]string{}, "yanked": false})
		if err != nil {
			t.Fatal(err)
		}
		p := CrateIndexPath(c.Name)
		r.index[p] = append(append(r.index[p], line...), '\n')
	}
	return r
}

// URL is the registry's index URL, without cargo's "sparse+" prefix.
func (r *CargoRegistry) URL() string { return r.srv.URL + "/index/" }

// CrateIndexPath is where a sparse index serves a crate's versions: by
// the length of its lower-cased name, 1/, 2/, 3/ with its first letter,
// or its first two and next two letters.
func CrateIndexPath(name string) string {
	n := strings.ToLower(name)
	switch len(n) {
	case 1, 2:
		return fmt.Sprintf("%d/%s", len(n), n)
	case 3:
		return "3/" + n[:1] + "/" + n
	default:
		return n[:2] + "/" + n[2:4] + "/" + n
	}
}

func (r *CargoRegistry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := req.URL.Path
	switch {
	case p == "/index/config.json":
		w.Header().Set("Content-Type", "application/json")
		// Cargo appends /{crate}/{version}/download to a dl without
		// markers.
		fmt.Fprintf(w, `{"dl": %q}`, r.srv.URL+"/api/v1/crates")
	case strings.HasPrefix(p, "/index/"):
		lines, ok := r.index[strings.TrimPrefix(p, "/index/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write(lines)
	case strings.HasPrefix(p, "/api/v1/crates/") && strings.HasSuffix(p, "/download"):
		data, ok := r.crates[strings.TrimSuffix(strings.TrimPrefix(p, "/api/v1/crates/"), "/download")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		r.downloads.Add(1)
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(data)
	default:
		http.NotFound(w, req)
	}
}

// crateFile is a .crate as cargo package makes it: a gzipped tar of
// name-version/ with its Cargo.toml and src/lib.rs.
func crateFile(t testing.TB, c Crate) []byte {
	t.Helper()
	var manifest strings.Builder
	fmt.Fprintf(&manifest, "[package]\nname = %q\nversion = %q\nedition = \"2021\"\n", c.Name, c.Version)
	if len(c.Deps) > 0 {
		manifest.WriteString("\n[dependencies]\n")
		for _, name := range sortedKeys(c.Deps) {
			fmt.Fprintf(&manifest, "%s = %q\n", name, c.Deps[name])
		}
	}
	files := [][2]string{{"Cargo.toml", manifest.String()}, {"src/lib.rs", c.Lib}}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: c.Name + "-" + c.Version + "/" + f[0], Mode: 0o644,
			Size: int64(len(f[1])), ModTime: time.Unix(499162500, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
