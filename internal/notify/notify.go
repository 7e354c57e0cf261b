// Package notify tells people about a task by webhook: when it waits for
// them at a gate, when it succeeds and when it fails. It holds the targets
// (a URL, a format and the events wanted), the message bodies of each
// format and the POST that delivers them.
//
// A webhook URL is a credential (whoever has a Slack webhook's URL may
// post to the channel): it is never put in an error, a log line or a
// workflow's history; Redacted names a target in their place.
package notify

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Event is what a message is about.
type Event string

const (
	EventGate      Event = "gate"      // the task waits for a person
	EventSucceeded Event = "succeeded" // the task is done
	EventFailed    Event = "failed"
	EventCancelled Event = "cancelled"
)

// Events are every event, in the order the documentation lists them.
var Events = []Event{EventGate, EventSucceeded, EventFailed, EventCancelled}

// Format is the shape of a message's body.
type Format string

const (
	FormatJSON    Format = "json"    // autocoder's own fields, for programs
	FormatSlack   Format = "slack"   // an incoming webhook: text and blocks
	FormatDiscord Format = "discord" // a channel webhook: content
)

// Formats are every format.
var Formats = []Format{FormatJSON, FormatSlack, FormatDiscord}

// Target is one webhook and the events it wants.
type Target struct {
	URL    string  `json:"url"`
	Format Format  `json:"format"`
	Events []Event `json:"events,omitempty"` // empty: all
}

// Wants says whether the target is sent e.
func (t Target) Wants(e Event) bool {
	return len(t.Events) == 0 || slices.Contains(t.Events, e)
}

// Redacted names the target without its secret: its format and host.
func (t Target) Redacted() string {
	host := "an unreadable URL"
	if u, err := url.Parse(t.URL); err == nil && u.Host != "" {
		host = u.Host
	}
	return fmt.Sprintf("%s webhook at %s", t.Format, host)
}

// CheckURL says why s cannot be a webhook URL, without repeating it.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an http:// or https:// URL")
	}
	return nil
}

// ParseFormat reads a format's name.
func ParseFormat(s string) (Format, error) {
	if f := Format(s); slices.Contains(Formats, f) {
		return f, nil
	}
	return "", fmt.Errorf("%q is not a format: want json, slack or discord", s)
}

// ParseEvent reads an event's name.
func ParseEvent(s string) (Event, error) {
	if e := Event(s); slices.Contains(Events, e) {
		return e, nil
	}
	return "", fmt.Errorf("%q is not an event: want gate, succeeded, failed or cancelled", s)
}

// FormatOf is the format a URL's service reads: Slack's and Discord's
// webhooks by their host, anything else JSON.
func FormatOf(rawURL string) Format {
	u, err := url.Parse(rawURL)
	if err != nil {
		return FormatJSON
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case host == "hooks.slack.com":
		return FormatSlack
	case (host == "discord.com" || host == "discordapp.com") && strings.HasPrefix(u.Path, "/api/webhooks/"):
		return FormatDiscord
	}
	return FormatJSON
}

// ParseFlag reads run's --notify: URL, or FORMAT:URL (slack:https://...).
// A URL alone takes the format its host calls for (FormatOf).
func ParseFlag(s string) (Target, error) {
	s = strings.TrimSpace(s)
	t := Target{URL: s}
	if name, rest, ok := strings.Cut(s, ":"); ok {
		if f, err := ParseFormat(name); err == nil {
			t.URL, t.Format = rest, f
		}
	}
	if err := CheckURL(t.URL); err != nil {
		return Target{}, fmt.Errorf("%w; want URL or FORMAT:URL, FORMAT json, slack or discord", err)
	}
	if t.Format == "" {
		t.Format = FormatOf(t.URL)
	}
	return t, nil
}
