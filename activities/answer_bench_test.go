package activities

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// envServeHuge makes the test binary a scripted model answering every
// request with a streamed answer of that many bytes (see TestMain).
const envServeHuge = "AUTOCODER_TEST_SERVE_ANSWER_BYTES"

func TestMain(m *testing.M) {
	if n := os.Getenv(envServeHuge); n != "" {
		serveHugeAnswer(n)
		return
	}
	os.Exit(m.Run())
}

// serveHugeAnswer serves one fenced file of n bytes, in 32 KiB events,
// and prints its base URL; it runs until killed.
func serveHugeAnswer(n string) {
	size, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	body := "```path=big.py\n" + strings.Repeat("x = 1  # padding\n", size/17) + "```\n"
	fmt.Printf("http://%s/v1\n", l.Addr())
	_ = http.Serve(l, llmtest.Handler(llmtest.Fixed(llmtest.Reply{Content: body, ChunkBytes: 32 << 10})))
}

// BenchmarkHugeAnswerMemory measures how far a model answer of 50 MB
// raises this process's peak memory (resident set) above its idle level
// while the Generate activity deals with it. The model runs in a child
// process, so only the worker side counts. On demand:
//
//	go test -run '^$' -bench HugeAnswerMemory -benchtime 1x ./activities/
func BenchmarkHugeAnswerMemory(b *testing.B) {
	const answerBytes = 50 << 20
	srv := exec.Command(os.Args[0], "-test.run=^$")
	srv.Env = append(os.Environ(), envServeHuge+"="+strconv.Itoa(answerBytes))
	out, err := srv.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("scripted model did not start: %v", err)
	}
	e := newEnvAt(b, strings.TrimSpace(url))
	base := e.snapshot(b, map[string]string{"app.py": "x = 1\n"})

	var worst int64
	for range b.N {
		runtime.GC()
		debug.FreeOSMemory()
		idle := procStatusKB(b, "VmRSS")
		resetPeakRSS(b)
		_, err := e.tenv.ExecuteActivity(e.acts.Generate, genInput(base))
		peak := procStatusKB(b, "VmHWM")
		worst = max(worst, peak-idle)
		b.Logf("Generate of a 50 MB answer: idle RSS %d MB, peak %d MB, error: %v", idle>>10, peak>>10, err)
	}
	fmt.Printf("peak memory over idle while handling a 50 MB model answer: %d MB (target: at most 100 MB)\n", worst>>10)
	b.ReportMetric(float64(worst>>10), "peak-MB-over-idle")
}

// resetPeakRSS sets the process's peak resident set (VmHWM) to its current
// one (Linux's clear_refs, value 5).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak memory figure: %v", err)
	}
}

// procStatusKB reads a kB figure from /proc/self/status.
func procStatusKB(b *testing.B, field string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("read %s: %v", field, err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
