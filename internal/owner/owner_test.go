package owner

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestGone(t *testing.T) {
	host, _ := os.Hostname()
	self := strconv.Itoa(os.Getpid())
	start := processStart(os.Getpid())
	if start == "" {
		t.Fatal("no start time for this process")
	}
	if got, want := ID(), host+"/"+self+"/"+start; got != want {
		t.Fatalf("ID() = %q, want %q", got, want)
	}
	cases := []struct {
		name, id          string
		wantGone, wantLoc bool
	}{
		{"no id", "", true, true},
		{"bad pid", "h/x/1", true, true},
		{"live here", "h/" + self + "/" + start, false, true},
		{"restarted here", "h/" + self + "/1", true, true},
		{"dead here", "h/999999999/1", true, true},
		{"live here, no start time", "h/" + self, false, true},
		{"dead here, no start time", "h/999999999", true, true},
		{"other host", "other/1/5", false, false},
	}
	for _, tc := range cases {
		gone, local := Gone(tc.id, "h")
		if gone != tc.wantGone || local != tc.wantLoc {
			t.Errorf("%s: Gone(%q) = %v, %v; want %v, %v", tc.name, tc.id, gone, local, tc.wantGone, tc.wantLoc)
		}
	}
	// A killed child not yet waited for is a zombie: gone all the same.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	childID := "h/" + strconv.Itoa(child.Process.Pid) + "/" + processStart(child.Process.Pid)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if gone, _ := Gone(childID, "h"); gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a killed child, not yet waited for, is not gone: %s", childID)
		}
	}
	if strings.Count(ID(), "/") != 2 {
		t.Errorf("ID() = %q: want host/pid/start", ID())
	}
}
