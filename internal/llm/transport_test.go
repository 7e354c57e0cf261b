package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"zero", http.Header{"Retry-After": {"0"}}, 0},
		{"http date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"milliseconds", http.Header{"Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative", http.Header{"Retry-After": {"-4"}}, 0},
		{"huge", http.Header{"Retry-After": {"99999999999999999"}}, maxRetryAfter},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.header, now); got != tt.want {
			t.Errorf("%s: retryAfter = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOllamaURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "http://127.0.0.1:11434"},
		{"localhost", "http://localhost:11434"},
		{"0.0.0.0:8080", "http://0.0.0.0:8080"},
		{"https://ollama.example.com", "https://ollama.example.com"},
		{"http://[::1]:9999", "http://[::1]:9999"},
	}
	for _, tt := range tests {
		u, err := ollamaURL(tt.in)
		if err != nil || u.String() != tt.want {
			t.Errorf("ollamaURL(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", "http://%zz"} {
		if _, err := ollamaURL(bad); err == nil {
			t.Errorf("ollamaURL(%q) accepted", bad)
		}
	}
}
