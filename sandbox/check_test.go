package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

// runMetrics keeps what a runner measured.
type runMetrics struct {
	mu   sync.Mutex
	runs map[string]int
	miss map[string]int
}

func (m *runMetrics) SandboxRun(language string, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if took > 0 {
		m.runs[language]++
	}
}

func (m *runMetrics) WarmPool(language string, hit bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !hit {
		m.miss[language]++
	}
}

// Each backend says it can run while it can, and not once closed; a run
// without a pool is measured as a miss.
func TestCheckAndRunMetrics(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m := &runMetrics{runs: map[string]int{}, miss: map[string]int{}}
			r, err := New(ctx, Config{Backend: backend, PoolSize: -1, Profiles: testProfiles(), Metrics: m})
			if err != nil {
				testenv.RequireService(t, backend+" backend", err)
			}
			if err := r.Check(ctx); err != nil {
				r.Close()
				t.Fatalf("check of a working %s backend: %v", backend, err)
			}
			run(t, r, Spec{Profile: "python", Cmd: sh("true"), Limits: DefaultLimits()})
			if m.runs["python"] != 1 || m.miss["python"] != 1 {
				t.Errorf("measured runs %v, misses %v; want one python run, a miss", m.runs, m.miss)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := r.Check(ctx); !errors.Is(err, ErrClosed) {
				t.Errorf("check after close: %v, want ErrClosed", err)
			}
		})
	}
}
