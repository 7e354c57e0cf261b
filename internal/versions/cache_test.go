package versions

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/store"
)

func TestAnswersAreKeptInTheStoreForTheTTL(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "autocoder.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := serve(t, map[string]page{"/left-pad": {mediaType: "application/json", body: `{"dist-tags":{"latest":"1.4.0"}}`}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Resolver{Cache: st, TTL: time.Hour, Now: func() time.Time { return now }}
	src := Source{API: lang.VersionsNpm, URL: reg.URL}

	first := r.Resolve(ctx, src, []string{"left-pad"})[0]
	now = now.Add(59 * time.Minute)
	second := r.Resolve(ctx, src, []string{"left-pad"})[0]
	if first.Cached || !second.Cached || second.Version != "1.4.0" || reg.asked.Load() != 1 {
		t.Fatalf("within the TTL: first cached=%t, second %+v, registry asked %d times; want the second from the cache",
			first.Cached, second, reg.asked.Load())
	}
	now = now.Add(2 * time.Minute)
	if third := r.Resolve(ctx, src, []string{"left-pad"})[0]; third.Cached || reg.asked.Load() != 2 {
		t.Fatalf("past the TTL: %+v, registry asked %d times; want the registry asked again", third, reg.asked.Load())
	}
	// Another registry's answer for the same name is its own.
	other := serve(t, map[string]page{"/left-pad": {mediaType: "application/json", body: `{"dist-tags":{"latest":"9.0.0"}}`}})
	if res := r.Resolve(ctx, Source{API: lang.VersionsNpm, URL: other.URL}, []string{"left-pad"})[0]; res.Version != "9.0.0" {
		t.Fatalf("another registry: %+v, want its own 9.0.0", res)
	}
}
