package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// TestWebUIShowsTask starts `autocoder dev`, runs a task against it from
// another process, and checks with a real headless Chromium that the
// embedded Web UI lists the task under an id that carries the task's words,
// that its Event History shows the summary of a tool-calling local
// activity, and that its User Metadata tab shows the task text (summary)
// and its phase (current details).
// Screenshots go to $AUTOCODER_ARTIFACTS or <repo>/.artifacts.
func TestWebUIShowsTask(t *testing.T) {
	t.Parallel()
	chrome, err := exec.LookPath("chromium")
	testenv.RequireService(t, "chromium (scripts/install-browser.sh installs it)", err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := binary(t)
	sc := pythonScenario
	// One turn writes both files through the tools (a RunTools local
	// activity, whose summary names its calls), the next finishes.
	writer := agent(func(v turnView) llmtest.Reply {
		if v.turn() == 0 {
			return calls(v, "",
				call("write", map[string]any{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
				call("write", map[string]any{"path": "test_calc.py", "content": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}))
		}
		return calls(v, "", call("finish", map[string]any{"summary": "add is written and tested."}))
	})
	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply { return writer.answer(sc.plan, chatView(req)) })
	devPort := freePort(t)
	env := cleanEnv(
		"AUTOCODER_DATA_DIR="+t.TempDir(),
		"AUTOCODER_DEV_PORT="+strconv.Itoa(devPort),
		"AUTOCODER_UI_PORT="+strconv.Itoa(freePort(t)),
		"OPENAI_BASE_URL="+model.URL(),
		"OPENAI_API_KEY=test-key",
	)
	uiBase := startDev(t, bin, env)

	// A client of a server it did not start knows its Web UI only when told.
	runEnv := append(env[:len(env):len(env)], "TEMPORAL_ADDRESS=127.0.0.1:"+strconv.Itoa(devPort), "TEMPORAL_UI_URL="+uiBase)
	run := exec.CommandContext(ctx, bin, "run", "--detach", "--json", "--lang", sc.lang, sc.task)
	run.Env = runEnv
	out, err := run.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("run --detach: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("run --detach: %v", err)
	}
	var started struct{ ID, RunID, URL string }
	if err := json.Unmarshal(out, &started); err != nil || started.ID == "" || started.RunID == "" {
		t.Fatalf("run --detach --json printed %q: %v", out, err)
	}
	wfPage := uiBase + "/namespaces/default/workflows/" + started.ID
	if started.URL != wfPage {
		t.Errorf("run printed web UI link %q, want %q", started.URL, wfPage)
	}

	deadline := time.Now().Add(time.Minute)
	st := statusJSON(t, bin, runEnv, started.ID)
	for !st.Phase.Done() && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		st = statusJSON(t, bin, runEnv, started.ID)
	}
	if st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("task %s ended in phase %q, want succeeded: %+v", started.ID, st.Phase, st)
	}

	b := browser{path: chrome, profile: t.TempDir()}
	dir := artifactDir(t)

	listShot := filepath.Join(dir, "webui-workflows.png")
	// The list shows ids, not summaries: the id's words tell tasks apart.
	const taskWords = "write-a-function-add-a-b-in-calc"
	b.show(ctx, t, uiBase+"/namespaces/default/workflows", listShot, func(doc *html.Node) error {
		return listedAs(doc, started.ID, "Completed", taskWords)
	})
	t.Logf("workflow list screenshot: %s", listShot)

	// Every activity carries a summary. The timeline of this UI version
	// shows a local activity (RunTools) by its type alone; the Event
	// History shows the summary recorded on its marker.
	historyShot := filepath.Join(dir, "webui-workflow-history.png")
	const toolsRow = "Local Activity Activity Type RunTools Summary write calc.py, write test_calc.py — step 1 attempt 1 turn 1"
	b.show(ctx, t, wfPage+"/"+started.RunID+"/history", historyShot, func(doc *html.Node) error {
		if !strings.Contains(textOf(doc), toolsRow) {
			return fmt.Errorf("the event history shows no row %q", toolsRow)
		}
		return nil
	})
	t.Logf("workflow history screenshot: %s", historyShot)

	// The list has no summary column in this UI version; the workflow's
	// User Metadata tab shows the static summary and the current details.
	metaShot := filepath.Join(dir, "webui-workflow-summary.png")
	doc := b.show(ctx, t, wfPage+"/"+started.RunID+"/user-metadata", metaShot, func(doc *html.Node) error {
		return frameContent(doc, "user-metadata-summary", func(c string) bool { return c == sc.task })
	})
	t.Logf("workflow summary screenshot: %s", metaShot)
	if err := frameContent(doc, "user-metadata-current-details", func(c string) bool {
		return strings.Contains(c, "**"+string(workflows.PhaseSucceeded)+"**")
	}); err != nil {
		t.Errorf("current details: %v", err)
	}

	// The summary frame is a separate page; check that it renders the text.
	src, err := frameSrc(doc, "user-metadata-summary")
	if err != nil {
		t.Fatal(err)
	}
	frame, err := url.Parse(uiBase)
	if err != nil {
		t.Fatalf("dev printed a bad Web UI address %q: %v", uiBase, err)
	}
	if frame, err = frame.Parse(src); err != nil {
		t.Fatalf("summary frame src %q: %v", src, err)
	}
	b.show(ctx, t, frame.String(), "", func(doc *html.Node) error {
		if mains := findAll(doc, tagIs("main")); len(mains) != 1 || textOf(mains[0]) != sc.task {
			return fmt.Errorf("rendered summary frame does not show the task text %q", sc.task)
		}
		return nil
	})
}

// startDev runs `autocoder dev` until the test ends and returns its Web UI
// address once it reports the services up.
func startDev(t *testing.T, bin string, env []string) string {
	t.Helper()
	dev := exec.Command(bin, "dev")
	dev.Env = env
	var stderr bytes.Buffer
	dev.Stderr = &stderr
	stdout, err := dev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatalf("start dev: %v", err)
	}
	uiURL := make(chan string, 1)
	var outLog strings.Builder
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			outLog.WriteString(sc.Text() + "\n")
			if u, ok := strings.CutPrefix(sc.Text(), "Web UI:"); ok {
				uiURL <- strings.TrimSpace(u)
			}
		}
	}()
	t.Cleanup(func() {
		_ = dev.Process.Signal(syscall.SIGTERM)
		select {
		case <-drained:
		case <-time.After(30 * time.Second):
			t.Error("dev did not stop within 30s of SIGTERM")
			_ = dev.Process.Kill()
			<-drained
		}
		if err := dev.Wait(); err != nil {
			t.Errorf("dev: %v", err)
		}
		if t.Failed() {
			t.Logf("dev stdout:\n%s\ndev stderr:\n%s", outLog.String(), stderr.String())
		}
	})
	select {
	case u := <-uiURL:
		return u
	case <-drained:
		t.Fatal("dev exited before reporting its Web UI")
	case <-time.After(time.Minute):
		t.Fatal("dev did not report its Web UI within a minute")
	}
	return ""
}

// artifactDir is where screenshots are kept after the test:
// $AUTOCODER_ARTIFACTS, else .artifacts at the repository root.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AUTOCODER_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".artifacts")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact dir: %v", err)
	}
	return dir
}

// browser drives headless Chromium one page load at a time.
type browser struct {
	path string
	// profile is a private user data dir, so no stored UI settings or a
	// concurrently running Chromium affect the pages.
	profile string
}

// pageAttempts bounds reloads of a page whose check fails: the list reads
// visibility records, which can trail a task's completion by a moment.
const pageAttempts = 3

// show loads page until check accepts its DOM, saving a screenshot to shot
// when it is not empty, and returns the accepted DOM.
func (b browser) show(ctx context.Context, t *testing.T, page, shot string, check func(*html.Node) error) *html.Node {
	t.Helper()
	var err error
	for range pageAttempts {
		var doc *html.Node
		if doc, err = b.load(ctx, page, shot); err != nil {
			t.Fatal(err)
		}
		if err = check(doc); err == nil {
			return doc
		}
		t.Logf("%s: %v; loading again", page, err)
	}
	t.Fatalf("%s after %d loads: %v", page, pageAttempts, err)
	return nil
}

func (b browser) load(ctx context.Context, page, shot string) (*html.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + b.profile,
		// Virtual time runs the UI's scripts and requests to completion
		// before the DOM is dumped.
		"--virtual-time-budget=15000"}
	if shot != "" {
		// A screenshot left by an earlier run must not pass for this one.
		if err := os.Remove(shot); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove old screenshot: %w", err)
		}
		// Tall enough for the middle of a short task's event history.
		args = append(args, "--window-size=1400,1800", "--screenshot="+shot)
	}
	cmd := exec.CommandContext(ctx, b.path, append(args, "--dump-dom", page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("chromium %s: %w\n%s", page, err, stderr.String())
	}
	if shot != "" {
		if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
			return nil, fmt.Errorf("chromium %s wrote no screenshot: %v\n%s", page, err, stderr.String())
		}
	}
	doc, err := html.Parse(&stdout)
	if err != nil {
		return nil, fmt.Errorf("parse dom of %s: %w", page, err)
	}
	return doc, nil
}

// listedAs finds the workflow list row naming id and checks its status and
// that it shows words.
func listedAs(doc *html.Node, id, status, words string) error {
	rows := findAll(doc, testID("workflows-summary-configurable-table-row"))
	var seen []string
	for _, r := range rows {
		text := textOf(r)
		if !strings.Contains(text, id) {
			seen = append(seen, text)
			continue
		}
		if len(findAll(r, func(n *html.Node) bool {
			return n.Data == "a" && strings.Contains(attr(n, "href"), "/workflows/"+id+"/")
		})) == 0 {
			return fmt.Errorf("row %q has no link to the workflow", text)
		}
		cells := findAll(r, testID("execution-status"))
		if len(cells) != 1 || textOf(cells[0]) != status {
			return fmt.Errorf("row %q does not show status %s", text, status)
		}
		if !strings.Contains(text, words) {
			return fmt.Errorf("row %q does not show the task's words %q", text, words)
		}
		return nil
	}
	return fmt.Errorf("no list row names %s; rows: %q", id, seen)
}

// frameSrc returns the src of the iframe with the given id; the UI renders
// user metadata (markdown) in such frames, passing it in the content query.
func frameSrc(doc *html.Node, id string) (string, error) {
	frames := findAll(doc, func(n *html.Node) bool { return n.Data == "iframe" && attr(n, "id") == id })
	if len(frames) != 1 {
		return "", fmt.Errorf("want one iframe %q, found %d", id, len(frames))
	}
	return attr(frames[0], "src"), nil
}

func frameContent(doc *html.Node, id string, ok func(string) bool) error {
	src, err := frameSrc(doc, id)
	if err != nil {
		return err
	}
	u, err := url.Parse(src)
	if err != nil {
		return fmt.Errorf("iframe %q src %q: %w", id, src, err)
	}
	if c := u.Query().Get("content"); !ok(c) {
		return fmt.Errorf("iframe %q shows %q", id, c)
	}
	return nil
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

func tagIs(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == tag }
}

func testID(id string) func(*html.Node) bool {
	return func(n *html.Node) bool { return attr(n, "data-testid") == id }
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// textOf is the visible text under n with runs of white space collapsed.
func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode && !inside(d, "script", "style", "title") {
			b.WriteString(d.Data + " ")
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func inside(n *html.Node, tags ...string) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		for _, tag := range tags {
			if p.Type == html.ElementNode && p.Data == tag {
				return true
			}
		}
	}
	return false
}
