package registrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"testing"
	"time"
)

// NpmPackage is one version of a package an NpmRegistry serves.
type NpmPackage struct {
	Name    string // "greet", or scoped: "@acme/shout"
	Version string
	// Files are the package's files by path (index.js, bin/cli.js);
	// package.json is made from the fields here.
	Files map[string]string
	// Dependencies and Bin are package.json's fields of the same names.
	Dependencies map[string]string
	Bin          map[string]string
}

// NpmRegistry serves packages over the npm registry's protocol, on the
// loopback: each package's document (the packument) at /NAME, a scoped
// name's slash escaped (/@scope%2fname), with each version's manifest and
// dist (tarball URL on the same server, sha512 integrity, sha1 shasum),
// and the tarballs, gzipped tars of the package under package/. It counts
// the tarballs it hands out.
type NpmRegistry struct {
	served
	docs     map[string][]byte // name → packument
	tarballs map[string][]byte // URL path → tarball
}

// NewNpmRegistry serves pkgs until the test ends.
func NewNpmRegistry(t testing.TB, pkgs ...NpmPackage) *NpmRegistry {
	t.Helper()
	r := &NpmRegistry{docs: map[string][]byte{}, tarballs: map[string][]byte{}}
	r.start(t, nil, http.HandlerFunc(r.serve))
	type packument struct {
		Name     string            `json:"name"`
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]any    `json:"versions"`
		Time     map[string]string `json:"time"`
	}
	docs := map[string]*packument{}
	for _, p := range pkgs {
		manifest := map[string]any{"name": p.Name, "version": p.Version}
		if len(p.Dependencies) > 0 {
			manifest["dependencies"] = p.Dependencies
		}
		if len(p.Bin) > 0 {
			manifest["bin"] = p.Bin
		}
		pj, err := json.MarshalIndent(manifest, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		tgz := npmTarball(t, pj, p.Files)
		// npm's own layout: /name/-/basename-version.tgz.
		file := "/" + p.Name + "/-/" + path.Base(p.Name) + "-" + p.Version + ".tgz"
		r.tarballs[file] = tgz
		sha := sha1.Sum(tgz)
		sum := sha512.Sum512(tgz)
		manifest["dist"] = map[string]string{
			"tarball":   r.srv.URL + file,
			"shasum":    hex.EncodeToString(sha[:]),
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]),
		}
		d := docs[p.Name]
		if d == nil {
			d = &packument{Name: p.Name, DistTags: map[string]string{}, Versions: map[string]any{}, Time: map[string]string{}}
			docs[p.Name] = d
		}
		d.Versions[p.Version] = manifest
		d.Time[p.Version] = time.Unix(1700000000, 0).UTC().Format(time.RFC3339)
		// The last version given is the latest.
		d.DistTags["latest"] = p.Version
	}
	for name, d := range docs {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		r.docs[name] = raw
	}
	return r
}

// URL is the registry's URL, as npm's registry setting takes it.
func (r *NpmRegistry) URL() string { return r.srv.URL + "/" }

func (r *NpmRegistry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if tgz, ok := r.tarballs[req.URL.Path]; ok {
		r.downloads.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tgz)
		return
	}
	// npm asks for /@scope%2fname; a client that does not escape the
	// slash gets the same.
	name, err := url.PathUnescape(strings.TrimPrefix(req.URL.EscapedPath(), "/"))
	doc, ok := r.docs[name]
	if err != nil || !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Not found"}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}

// npmTarball is a package's tarball: package.json and files under
// package/, gzipped, as npm pack makes it.
func npmTarball(t testing.TB, packageJSON []byte, files map[string]string) []byte {
	t.Helper()
	all := map[string][]byte{"package.json": packageJSON}
	for p, data := range files {
		all[p] = []byte(data)
	}
	names := make([]string, 0, len(all))
	for p := range all {
		names = append(names, p)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, p := range names {
		mode := int64(0o644)
		if strings.HasPrefix(p, "bin/") {
			mode = 0o755
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: "package/" + p, Mode: mode, Size: int64(len(all[p])), ModTime: time.Unix(499162500, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(all[p]); err != nil {
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
