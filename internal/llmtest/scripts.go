package llmtest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Text always answers with content.
func Text(content string) Script { return Fixed(Reply{Content: content}) }

// Fixed always gives the same reply.
func Fixed(r Reply) Script { return func(ChatRequest) Reply { return r } }

// Sequence gives the replies in order, one per call. Calls past the end get
// a 500 naming the exhaustion, so a test making too many calls fails loudly.
func Sequence(replies ...Reply) Script {
	var mu sync.Mutex
	next := 0
	return func(ChatRequest) Reply {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			return Reply{Status: http.StatusInternalServerError,
				Content: fmt.Sprintf("llmtest: sequence of %d replies exhausted", len(replies))}
		}
		next++
		return replies[next-1]
	}
}

// Rule answers with Reply when the last user message contains Contains.
// An empty Contains matches every request.
type Rule struct {
	Contains string
	Reply    Reply
}

// Rules answers with the first rule matching the last user message. A
// request no rule matches gets a 400 quoting the start of the message.
func Rules(rules ...Rule) Script {
	return func(req ChatRequest) Reply {
		last := req.LastUser()
		for _, r := range rules {
			if strings.Contains(last, r.Contains) {
				return r.Reply
			}
		}
		return Reply{Status: http.StatusBadRequest,
			Content: fmt.Sprintf("llmtest: no rule matches the last user message %q", clip(last, 80))}
	}
}

// FailFirst answers the first n calls with fail, then hands over to then:
// the shape of a provider outage a retry policy must ride out.
func FailFirst(n int, fail Reply, then Script) Script {
	var mu sync.Mutex
	seen := 0
	return func(req ChatRequest) Reply {
		mu.Lock()
		seen++
		failing := seen <= n
		mu.Unlock()
		if failing {
			return fail
		}
		return then(req)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
