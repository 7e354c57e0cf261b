package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/truncate"
)

// Body is the JSON a target of format f is sent for m; link is the task's
// Web UI page, "" when unknown.
func Body(f Format, m Message, link string) ([]byte, error) {
	var body any
	switch f {
	case FormatSlack:
		body = slackBody(m, link)
	case FormatDiscord:
		body = discordBody(m, link)
	case FormatJSON, "":
		body = jsonBody(m, link)
	default:
		return nil, fmt.Errorf("unknown webhook format %q", f)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode webhook body: %w", err)
	}
	return data, nil
}

// jsonAnswer is an Answer with the command that sends it.
type jsonAnswer struct {
	Words   []string `json:"words,omitempty"`
	Means   string   `json:"means"`
	Command string   `json:"command,omitempty"`
}

// jsonMessage is the generic format: every field, for programs.
type jsonMessage struct {
	TaskID   string       `json:"taskId"`
	Event    Event        `json:"event"`
	Title    string       `json:"title"`
	Text     string       `json:"text"`
	Task     string       `json:"task"`
	Gate     string       `json:"gate,omitempty"`
	Question string       `json:"question,omitempty"`
	Details  string       `json:"details,omitempty"`
	Answers  []jsonAnswer `json:"answers,omitempty"`
	Result   string       `json:"result,omitempty"`
	Commands []string     `json:"commands"`
	Link     string       `json:"link,omitempty"`
}

func jsonBody(m Message, link string) jsonMessage {
	out := jsonMessage{
		TaskID: m.TaskID, Event: m.Event, Title: m.Title(), Task: m.Task, Gate: m.Gate,
		Question: m.Question, Details: m.quotedDetails(), Result: m.quotedResult(),
		Commands: m.Commands(), Link: link,
	}
	for _, a := range m.Answers {
		out.Answers = append(out.Answers, jsonAnswer{Words: a.Words, Means: a.Means, Command: answerCommand(m.TaskID, a.Signal)})
	}
	out.Text = plainText(m)
	return out
}

// plainText is the message as lines of plain text.
func plainText(m Message) string {
	var b strings.Builder
	b.WriteString("Task: " + m.quotedTask() + "\n")
	if m.Event == EventGate {
		b.WriteString(m.Question + "\n")
		if d := m.quotedDetails(); d != "" {
			b.WriteString(d + "\n")
		}
		b.WriteString("Answers: " + strings.Join(m.answerLines(), "; ") + "\n")
	} else if r := m.quotedResult(); r != "" {
		b.WriteString(r + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Slack: https://api.slack.com/reference/surfaces/formatting. Text is
// mrkdwn, in which &, < and > must be escaped: unescaped, "<!channel>"
// would notify a whole channel and "<url|text>" would show a link under
// other words.
type slackMessage struct {
	Text   string       `json:"text"` // the notification's text, and the fallback
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

func slackBody(m Message, link string) slackMessage {
	section := func(text string) slackBlock {
		return slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: clipMrkdwn(text)}}
	}
	var head strings.Builder
	head.WriteString("*" + slackEscape(m.Title()) + "*\n")
	head.WriteString("Task: " + slackEscape(m.quotedTask()))
	if m.Event == EventGate {
		head.WriteString("\n*" + slackEscape(m.Question) + "*")
	}
	blocks := []slackBlock{section(head.String())}
	if d := m.quotedDetails() + m.quotedResult(); d != "" {
		blocks = append(blocks, section("```\n"+slackEscape(noFence(d))+"\n```"))
	}
	if m.Event == EventGate {
		blocks = append(blocks, section("Answers: "+slackEscape(strings.Join(m.answerLines(), "; "))))
	}
	var cmds []string
	for _, c := range m.Commands() {
		cmds = append(cmds, "`"+slackEscape(c)+"`")
	}
	foot := strings.Join(cmds, "  ")
	if link != "" {
		foot += "\n<" + slackEscape(link) + "|Open it in the Temporal Web UI>"
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: foot}}})
	return slackMessage{Text: slackEscape(m.Title()), Blocks: blocks}
}

// maxSlackSection is Slack's bound on a section's text, in characters,
// less room for the closing fence.
const maxSlackSection = 3000 - 10

// clipMrkdwn bounds a section's escaped text, which may be up to five
// times its quoted text (&lt;), without cutting an entity in two; a cut
// code block is closed again.
func clipMrkdwn(s string) string {
	if len(s) <= maxSlackSection {
		return s
	}
	cut := truncate.Head(s, maxSlackSection-1)
	if amp := strings.LastIndexByte(cut, '&'); amp >= 0 && !strings.Contains(cut[amp:], ";") {
		cut = cut[:amp]
	}
	cut += "…"
	if strings.HasPrefix(s, "```") {
		cut += "\n```"
	}
	return cut
}

// Discord: https://discord.com/developers/docs/resources/webhook. Content
// is markdown of at most 2000 characters. allowed_mentions with nothing
// to parse keeps @everyone, @here and user or role mentions in quoted
// text from pinging anyone; markdown in quoted text is escaped, so that it
// cannot show a link under other words.
type discordMessage struct {
	Content         string          `json:"content"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
}

type allowedMentions struct {
	Parse []string `json:"parse"` // always empty: no mention pings
}

// maxDiscordContent is Discord's bound on content, in characters; the
// bounds on quoted text keep a message well within it.
const maxDiscordContent = 2000

var discordEscaper = func() *strings.Replacer {
	var pairs []string
	for _, c := range "\\*_~`|>[]()#<@" {
		pairs = append(pairs, string(c), "\\"+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

func discordEscape(s string) string { return discordEscaper.Replace(s) }

func discordBody(m Message, link string) discordMessage {
	var b strings.Builder
	b.WriteString("**" + discordEscape(m.Title()) + "**\n")
	b.WriteString("Task: " + discordEscape(m.quotedTask()) + "\n")
	if m.Event == EventGate {
		b.WriteString("**" + discordEscape(m.Question) + "**\n")
	}
	if d := m.quotedDetails() + m.quotedResult(); d != "" {
		b.WriteString("```\n" + noFence(d) + "\n```\n")
	}
	if m.Event == EventGate {
		b.WriteString("Answers: " + discordEscape(strings.Join(m.answerLines(), "; ")) + "\n")
	}
	for _, c := range m.Commands() {
		b.WriteString("`" + strings.ReplaceAll(c, "`", "'") + "`\n")
	}
	if link != "" {
		b.WriteString("<" + link + ">\n") // <> keeps Discord from embedding a preview
	}
	content := strings.TrimRight(b.String(), "\n")
	if r := []rune(content); len(r) > maxDiscordContent {
		content = string(r[:maxDiscordContent-1]) + "…"
	}
	return discordMessage{Content: content, AllowedMentions: allowedMentions{Parse: []string{}}}
}

// noFence keeps quoted text from closing the code block it is shown in: a
// zero-width space goes between backticks.
func noFence(s string) string {
	return strings.ReplaceAll(s, "``", "`\u200b`")
}
