package starter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

// TranscriptOptions are transcript's arguments.
type TranscriptOptions struct {
	ID     string
	JSON   bool
	Follow bool
}

func NewCmdTranscript(f *Factory, runF func(*TranscriptOptions) error) *cobra.Command {
	var o TranscriptOptions
	cmd := &cobra.Command{
		Use:   "transcript ID",
		Short: "Print a task's conversations with the model: its text, tool calls and their results",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if o.Follow && o.JSON {
				return usageError("--follow prints messages as they come; it cannot be combined with --json")
			}
			if runF != nil {
				return runF(&o)
			}
			return showTranscript(cmd.Context(), f, &o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the conversations as JSON")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new messages until the task is done")
	return cmd
}

// transcriptPoll is how often --follow reads the task's status.
const transcriptPoll = time.Second

func showTranscript(ctx context.Context, f *Factory, o *TranscriptOptions) error {
	c, err := f.TaskClient(ctx)
	if err != nil {
		return err
	}
	st, err := c.Status(ctx, o.ID)
	if err != nil {
		return fmt.Errorf("query task %s: %w", o.ID, err)
	}
	entries, err := f.Store(ctx)
	if err != nil {
		return err
	}
	convs, err := taskclient.ReadConversations(ctx, st.Transcripts, entries)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(f.IO.Out, convs)
	}
	p := &transcriptPrinter{w: f.IO.Out, seen: map[string]int{}}
	p.print(convs)
	if !o.Follow || st.Phase.Done() {
		if len(convs) == 0 {
			fmt.Fprintf(f.IO.ErrOut, "task %s has no conversation yet\n", o.ID)
		}
		return nil
	}
	// A server that stops answering is lost contact, as for watch: said
	// once, retried for a bounded while, then exit 3.
	k := newContact(f, o.ID, func() {})
	tick := time.NewTicker(transcriptPoll)
	defer tick.Stop()
	for !st.Phase.Done() {
		select {
		case <-ctx.Done():
			return stoppedFollowing(o.ID, ctx.Err())
		case <-tick.C:
		}
		next, err := queryStatusBounded(ctx, c, o.ID)
		switch {
		case ctx.Err() != nil:
			return stoppedFollowing(o.ID, ctx.Err())
		case cannotReach(err):
			if lost := k.check(ctx, c, err); lost != nil {
				return lost
			}
			continue
		case err != nil:
			return fmt.Errorf("query task %s: %w", o.ID, err)
		}
		k.ok()
		st = next
		if convs, err = taskclient.ReadConversations(ctx, st.Transcripts, entries); err != nil {
			return err
		}
		p.print(convs)
	}
	return nil
}

// exportTranscript writes the task's conversations to path as JSON.
func exportTranscript(ctx context.Context, f *Factory, st workflows.Status, entries taskclient.TranscriptReader, path string) error {
	convs, err := taskclient.ReadConversations(ctx, st.Transcripts, entries)
	if err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return usageError("--transcript: %v", err)
	}
	if err := writeJSON(out, convs); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "wrote %d conversation(s) to %s\n", len(convs), path)
	return nil
}

// transcriptPrinter prints conversations for people, each message once.
type transcriptPrinter struct {
	w    io.Writer
	seen map[string]int // messages printed, by transcript id
}

// transcriptResultLines bounds a tool result shown: its head and tail.
const transcriptResultLines = 20

func (p *transcriptPrinter) print(convs []taskclient.Conversation) {
	for _, conv := range convs {
		n, started := p.seen[conv.ID]
		if !started {
			fmt.Fprintf(p.w, "── step %d (conversation %s) ──\n", conv.Step, conv.ID)
		}
		for _, m := range conv.Messages[min(n, len(conv.Messages)):] {
			p.message(m)
		}
		p.seen[conv.ID] = len(conv.Messages)
	}
}

func (p *transcriptPrinter) message(m llm.Message) {
	if m.Result != nil {
		mark := "result"
		if m.Result.IsError {
			mark = "error"
		}
		fmt.Fprintf(p.w, "  ← %s %s:\n%s\n", termsafe.Line(m.Result.Name), mark, indent(termsafe.Text(headTail(m.Result.Content, transcriptResultLines))))
		return
	}
	if m.FellBack != "" {
		fmt.Fprintf(p.w, "(answered by %s, fell back from %s)\n", termsafe.Line(m.Model), termsafe.Line(m.FellBack))
	}
	if text := strings.TrimSpace(m.Text); text != "" {
		fmt.Fprintf(p.w, "%s:\n%s\n", m.Role, indent(termsafe.Text(text)))
	}
	for _, call := range m.ToolCalls {
		p.call(call)
	}
}

// call prints a tool call on one line, except for the text arguments that
// span lines (the code a write or an edit carries): each of those follows
// as a block of its own, its lines and their indentation as written.
func (p *transcriptPrinter) call(c llm.ToolCall) {
	var args map[string]json.RawMessage
	if json.Unmarshal([]byte(c.Arguments), &args) != nil {
		fmt.Fprintf(p.w, "  → %s %s\n", termsafe.Line(c.Name), termsafe.Clip(c.Arguments, 300))
		return
	}
	blocks := map[string]string{}
	for k, raw := range args {
		var s string
		if json.Unmarshal(raw, &s) == nil && strings.Contains(s, "\n") {
			blocks[k] = s
			delete(args, k)
		}
	}
	line := c.Arguments
	if len(blocks) > 0 {
		short, _ := json.Marshal(args) // sorted keys; it was decoded from JSON
		line = string(short)
	}
	fmt.Fprintf(p.w, "  → %s %s\n", termsafe.Line(c.Name), termsafe.Clip(line, 300))
	for _, k := range slices.Sorted(maps.Keys(blocks)) {
		fmt.Fprintf(p.w, "    %s:\n%s\n", termsafe.Line(k), indent(indent(termsafe.Text(headTail(blocks[k], transcriptResultLines)))))
	}
}

// headTail keeps the first and last n/2 lines of s, saying how many it
// left out.
func headTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	head, tail := lines[:n/2], lines[len(lines)-n/2:]
	return strings.Join(head, "\n") + fmt.Sprintf("\n… %d more lines …\n", len(lines)-len(head)-len(tail)) + strings.Join(tail, "\n")
}
