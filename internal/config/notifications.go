package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/notify"
)

// Notification is one [[notifications]] entry of the file: a webhook, the
// format of its messages and the events it wants. Its URL is a secret,
// written in the file (URL) or named by a variable (URLEnv).
type Notification struct {
	URL    string
	URLEnv string
	Format notify.Format // "": the one the URL's host calls for
	Events []notify.Event
	Source Source // the entry's [[notifications]] line
}

// notificationKeys are the keys an entry takes.
var notificationKeys = []string{"url", "url_env", "format", "events"}

// readNotifications reads the notifications array of tables.
func (r *fileReader) readNotifications(v any) {
	r.eachEntry("notifications", v, "webhooks: write each as a [[notifications]] table with a url",
		"notification is a table ([[notifications]] with url = \"...\")",
		func(prefix string, table map[string]any) {
			if n, ok := r.notification(prefix, table); ok {
				r.notifications = append(r.notifications, n)
			}
		})
}

// eachEntry calls read with each table of the array of tables v, the
// section name; an empty [name] table, which earlier versions kept in
// reserve, stands for none. what and each say, in its errors, what the
// list holds and what an entry must be.
func (r *fileReader) eachEntry(name string, v any, what, each string, read func(prefix string, table map[string]any)) {
	if table, ok := v.(map[string]any); ok && len(table) == 0 {
		return
	}
	entries, ok := v.([]any)
	if !ok {
		r.fail(name, "%s is a list of %s", name, what)
		return
	}
	for i, e := range entries {
		prefix := fmt.Sprintf("%s.%d", name, i)
		table, ok := e.(map[string]any)
		if !ok {
			r.fail(prefix, "each %s, not %s", each, tomlType(e))
			continue
		}
		read(prefix, table)
	}
}

// notification reads one entry; a mistake is reported at its key's line.
func (r *fileReader) notification(prefix string, table map[string]any) (Notification, bool) {
	n := Notification{Source: Source{Kind: FromFile, Path: r.path, Line: r.line(prefix)}}
	ok := true
	bad := func(key, format string, args ...any) {
		r.fail(prefix+"."+key, "[[notifications]] "+key+": "+format, args...)
		ok = false
	}
	for key, v := range table {
		if !slices.Contains(notificationKeys, key) {
			bad(key, "unknown key; a notification takes %s", strings.Join(notificationKeys, ", "))
			continue
		}
		if key == "events" {
			n.Events = r.events(v, func(format string, args ...any) { bad(key, format, args...) })
			continue
		}
		s, isString := v.(string)
		if !isString {
			bad(key, "want a string in quotes, not %s", tomlType(v))
			continue
		}
		switch key {
		case "url":
			if err := notify.CheckURL(s); err != nil {
				bad(key, "%v", err) // the URL is a secret: not repeated
			}
			n.URL = s
		case "url_env":
			if err := checkEnvName(s); err != nil {
				bad(key, "%v", err)
			}
			n.URLEnv = s
		case "format":
			f, err := notify.ParseFormat(s)
			if err != nil {
				bad(key, "%v", err)
			}
			n.Format = f
		}
	}
	if ok && (n.URL == "") == (n.URLEnv == "") {
		r.fail(prefix, "[[notifications]] needs a url, or url_env naming the variable that holds it (one of them)")
		ok = false
	}
	return n, ok
}

// events reads an events list; bad reports a mistake.
func (r *fileReader) events(v any, bad func(format string, args ...any)) []notify.Event {
	list, ok := v.([]any)
	if !ok {
		bad("want a list such as [\"gate\", \"failed\"], not %s", tomlType(v))
		return nil
	}
	var events []notify.Event
	for _, item := range list {
		s, _ := item.(string)
		e, err := notify.ParseEvent(s)
		if err != nil {
			bad("%v", err)
			return nil
		}
		events = append(events, e)
	}
	return events
}

// Notifications are the file's webhooks as targets,
// each URL read: a url_env's variable must be set.
func (c *Config) Notifications() ([]notify.Target, error) {
	var targets []notify.Target
	for _, n := range c.notifications {
		u := n.URL
		if n.URLEnv != "" {
			if u = c.getenv(n.URLEnv); u == "" {
				return nil, fmt.Errorf("[[notifications]] (%s) url_env names %s, which is not set: export it, or change the file", n.Source, n.URLEnv)
			}
			if err := notify.CheckURL(u); err != nil {
				return nil, fmt.Errorf("[[notifications]] (%s): %s is %v", n.Source, n.URLEnv, err)
			}
		}
		f := n.Format
		if f == "" {
			f = notify.FormatOf(u)
		}
		targets = append(targets, notify.Target{URL: u, Format: f, Events: n.Events})
	}
	return targets, nil
}

// FileNotifications are the file's [[notifications]] entries as written.
func (c *Config) FileNotifications() []Notification { return c.notifications }

// Masked describes the entry for `config show`, its URL masked: the
// scheme and host are shown, the rest (the credential) is not.
func (n Notification) Masked() string {
	var where string
	if n.URLEnv != "" {
		where = "url from $" + n.URLEnv
	} else {
		where = MaskedSecret
		if u, err := url.Parse(n.URL); err == nil {
			where = u.Scheme + "://" + u.Host + "/" + MaskedSecret
		}
	}
	f := string(n.Format)
	if f == "" {
		f = "format by host"
	}
	events := "all events"
	if len(n.Events) > 0 {
		parts := make([]string, len(n.Events))
		for i, e := range n.Events {
			parts[i] = string(e)
		}
		events = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s, %s, %s", where, f, events)
}

// MaskedSecret stands for a secret's value, which is never printed.
const MaskedSecret = "********"
