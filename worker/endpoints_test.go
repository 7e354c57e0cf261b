package worker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestReadinessNamesWhatFails(t *testing.T) {
	ok := func(context.Context) error { return nil }
	never := make(chan struct{})
	defer close(never)
	hangs := func(context.Context) error { <-never; return nil } // ignores its context
	for _, tc := range []struct {
		name   string
		checks []Check
		code   int
		body   []string
	}{
		{"all pass", []Check{{"temporal", ok}, {"store", ok}}, http.StatusOK, []string{"ready\n", "temporal: ok\n", "store: ok\n"}},
		{"one fails", []Check{{"temporal", ok}, {"store", func(context.Context) error { return errors.New("connection refused") }}},
			http.StatusServiceUnavailable, []string{"not ready: store\n", "temporal: ok\n", "store: failed: connection refused\n"}},
		{"one hangs", []Check{{"sandbox", hangs}, {"store", ok}}, http.StatusServiceUnavailable,
			[]string{"not ready: sandbox\n", "sandbox: failed: no answer within 3s\n", "store: ok\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Serve("127.0.0.1:0", http.NotFoundHandler(), tc.checks)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			start := time.Now()
			resp, err := http.Get("http://" + e.Addr() + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if took := time.Since(start); took > CheckTimeout+time.Second {
				t.Errorf("answered after %s; want within the check timeout", took)
			}
			body := string(b)
			if resp.StatusCode != tc.code || !strings.HasPrefix(body, tc.body[0]) {
				t.Errorf("/readyz = %d %q; want %d starting %q", resp.StatusCode, body, tc.code, tc.body[0])
			}
			for _, line := range tc.body[1:] {
				if !strings.Contains(body, line) {
					t.Errorf("/readyz body %q lacks %q", body, line)
				}
			}
		})
	}
}

func TestServeRefusesATakenAddress(t *testing.T) {
	e, err := Serve("127.0.0.1:0", http.NotFoundHandler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := Serve(e.Addr(), http.NotFoundHandler(), nil); err == nil || !strings.Contains(err.Error(), e.Addr()) {
		t.Errorf("second Serve on %s: %v; want an error naming the address", e.Addr(), err)
	}
}
