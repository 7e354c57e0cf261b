package versions

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/testenv"
)

// TestGoModuleProxyForReal asks the module proxy this machine's Go is
// configured with, and checks the answer against the go command's own.
func TestGoModuleProxyForReal(t *testing.T) {
	ctx := context.Background()
	src := SourceOf(ctx, golang.Language().Deps.Versions, "")
	first, _, _ := strings.Cut(src.URL, ",")
	first, _, _ = strings.Cut(first, "|")
	reachable := func() error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, trimBase(first)+"/golang.org/x/text/@v/list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	testenv.RequireService(t, "the Go module proxy "+first, reachable())

	res := (&Resolver{}).Resolve(ctx, src, []string{"golang.org/x/text"})[0]
	if res.Err != nil || !strings.HasPrefix(res.Version, "v0.") {
		t.Fatalf("golang.org/x/text from %s: %q, %v", src.URL, res.Version, res.Err)
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", "golang.org/x/text@latest")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m golang.org/x/text@latest: %v", err)
	}
	if want := strings.TrimSpace(string(out)); res.Version != want {
		t.Errorf("golang.org/x/text: %s, the go command says %s", res.Version, want)
	}
}
