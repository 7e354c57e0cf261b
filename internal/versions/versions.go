// Package versions finds the newest versions of packages in each
// ecosystem's registry, through the registry's own documented API: the Go
// module proxy, PyPI's JSON API or a simple index, the npm registry,
// Cargo's sparse index and Maven repositories. Stable versions win over
// pre-releases, yanked ones are never chosen, and a registry that cannot
// be asked is a warning for its packages, not a failure of the rest.
package versions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
)

// ErrNotFound is a package the registry does not have.
var ErrNotFound = errors.New("no such package")

// Source is a registry to ask: its protocol and address.
type Source struct {
	API lang.VersionsAPI
	URL string
}

// SourceOf is where a language's versions are asked: the index the user
// named for it (registries.index), else the registry its ecosystem's own
// configuration names (v.Configured), else the documented default.
func SourceOf(ctx context.Context, v lang.Versions, index string) Source {
	if index == "" {
		index = Configured(ctx, v.Configured)
	}
	if index == "" || index == v.URL {
		return Source{API: v.API, URL: v.URL}
	}
	api := v.IndexAPI
	if api == "" {
		api = v.API
	}
	return Source{API: api, URL: index}
}

// Configured is what the ecosystem's command prints of its registry
// (lang.Versions.Configured); "" when there is no such command or it
// fails.
func Configured(ctx context.Context, cmd []string) string {
	if len(cmd) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cmd[0], cmd[1:]...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Cache keeps what registries answered (store.Store's memos).
type Cache interface {
	GetMemo(ctx context.Context, key string) ([]byte, error)
	PutMemo(ctx context.Context, key string, value []byte) error
}

// Resolver asks registries for the newest versions of packages.
type Resolver struct {
	// Client makes the requests; nil is one with Timeout.
	Client  *http.Client
	Timeout time.Duration // per request; 0 is 15s
	// Cache, when set, keeps each answer for TTL.
	Cache Cache
	TTL   time.Duration
	// Now is the clock the TTL is measured by; nil is time.Now.
	Now func() time.Time
}

// Result is one package's newest version, or why there is none.
type Result struct {
	Package  string
	Version  string // "" when Err is set
	Registry string // the address asked (a GOPROXY entry for Go)
	Cached   bool   // the answer came from the cache
	Err      error
}

// parallel is how many packages are asked at once.
const parallel = 4

// Resolve asks src for the newest version of each package, in order.
func (r *Resolver) Resolve(ctx context.Context, src Source, pkgs []string) []Result {
	results := make([]Result, len(pkgs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, p := range pkgs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = r.resolveOne(ctx, src, p)
		}()
	}
	wg.Wait()
	return results
}

func (r *Resolver) resolveOne(ctx context.Context, src Source, pkg string) (res Result) {
	// A registry's address may carry credentials (https://token@host/):
	// what is shown, kept and cached never does.
	defer func() { res.Registry = withoutUser(res.Registry) }()
	res = Result{Package: pkg, Registry: src.URL}
	key := cacheKey(src, pkg)
	if e, ok := r.cached(ctx, key); ok {
		res.Version, res.Registry, res.Cached = e.Version, e.Registry, true
		return res
	}
	ask, ok := protocols[src.API]
	if !ok {
		res.Err = fmt.Errorf("no registry protocol %q is known", src.API)
		return res
	}
	res.Registry, res.Version, res.Err = ask(ctx, r, src.URL, pkg)
	if res.Err == nil {
		r.remember(ctx, key, cacheEntry{Version: res.Version, Registry: withoutUser(res.Registry), At: r.now()})
	}
	return res
}

// protocol asks the registry at base for pkg's newest version; it returns
// the address it asked.
type protocol func(ctx context.Context, r *Resolver, base, pkg string) (registry, version string, err error)

var protocols = map[lang.VersionsAPI]protocol{
	lang.VersionsGoProxy: goProxy,
	lang.VersionsPyPI:    pypiJSON,
	lang.VersionsSimple:  pypiSimple,
	lang.VersionsNpm:     npm,
	lang.VersionsCrates:  crates,
	lang.VersionsMaven:   maven,
}

type cacheEntry struct {
	Version  string    `json:"version"`
	Registry string    `json:"registry"`
	At       time.Time `json:"at"`
}

func cacheKey(src Source, pkg string) string {
	return "versions/1\x00" + string(src.API) + "\x00" + withoutUser(src.URL) + "\x00" + pkg
}

func (r *Resolver) cached(ctx context.Context, key string) (cacheEntry, bool) {
	if r.Cache == nil || r.TTL <= 0 {
		return cacheEntry{}, false
	}
	b, err := r.Cache.GetMemo(ctx, key)
	if err != nil {
		return cacheEntry{}, false
	}
	var e cacheEntry
	if json.Unmarshal(b, &e) != nil || e.Version == "" || r.now().Sub(e.At) >= r.TTL {
		return cacheEntry{}, false
	}
	return e, true
}

// remember keeps an answer; a cache that cannot keep it only costs the
// next ask.
func (r *Resolver) remember(ctx context.Context, key string, e cacheEntry) {
	if r.Cache == nil || r.TTL <= 0 {
		return
	}
	b, _ := json.Marshal(e)
	_ = r.Cache.PutMemo(ctx, key, b)
}

func (r *Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// maxBody caps what one registry answer may be (npm's documents of
// popular packages run to megabytes).
const maxBody = 64 << 20

// get fetches url, asking for the media types in accept, and returns the
// body and its media type. 404 and 410 are ErrNotFound.
func (r *Resolver) get(ctx context.Context, url, accept string) ([]byte, string, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", fmt.Errorf("ask %s: %w", url, err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("User-Agent", "autocoder")
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("cannot reach the registry (%w); check the network or the registry's address", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, "", ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("the registry answered %s for %s", resp.Status, url)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", url, err)
	}
	if len(body) > maxBody {
		return nil, "", fmt.Errorf("the answer of %s is over %d MiB", url, maxBody>>20)
	}
	mediaType, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return body, strings.TrimSpace(strings.ToLower(mediaType)), nil
}

// getJSON fetches url and decodes its JSON into v.
func (r *Resolver) getJSON(ctx context.Context, url, accept string, v any) error {
	body, _, err := r.get(ctx, url, accept)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the registry's answer at %s is not the JSON it documents: %w", url, err)
	}
	return nil
}

// trimBase is a registry address without its trailing slashes.
func trimBase(base string) string { return strings.TrimRight(base, "/") }

// withoutUser is a registry address without the user and password it may
// carry.
func withoutUser(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.User == nil {
		return addr
	}
	u.User = nil
	return u.String()
}
