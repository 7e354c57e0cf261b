package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The Gemini API's generateContent protocol with function calling. Its
// function calls carry no id (or, from some models, one we cannot count
// on): each call gets one of ours, and results go back as functionResponse
// parts by the call's name, in the order of the calls.

type gmRequest struct {
	SystemInstruction *gmContent   `json:"systemInstruction,omitempty"`
	Contents          []gmContent  `json:"contents"`
	Tools             []gmTool     `json:"tools,omitempty"`
	ToolConfig        *gmToolConf  `json:"toolConfig,omitempty"`
	GenerationConfig  *gmGenConfig `json:"generationConfig,omitempty"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"` // "user" or "model"
	Parts []gmPart `json:"parts"`
}

// gmPart is one part of a content: text, a function call or a function
// response; the fields of the other kinds stay empty.
type gmPart struct {
	Text             string      `json:"text,omitempty"`
	FunctionCall     *gmCall     `json:"functionCall,omitempty"`
	FunctionResponse *gmResponse `json:"functionResponse,omitempty"`
	// Thought marks a part holding the model's thinking, not its answer.
	Thought bool `json:"thought,omitempty"`
	// ThoughtSignature comes with a function call of a thinking model,
	// and must go back with it (Gemini 3 refuses the call without it).
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

type gmCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// gmResponse answers a call: the API wants an object, and reads "output"
// as the function's result and "error" as its failure.
type gmResponse struct {
	Name     string            `json:"name"`
	Response map[string]string `json:"response"`
}

type gmTool struct {
	FunctionDeclarations []gmFunction `json:"functionDeclarations"`
}

// gmFunction declares a tool. Its parameters go as parametersJsonSchema,
// which takes JSON Schema as it is ($ref, $defs, const,
// additionalProperties); the older "parameters" field takes only an
// OpenAPI subset.
type gmFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gmToolConf struct {
	FunctionCallingConfig struct {
		Mode string `json:"mode"`
	} `json:"functionCallingConfig"`
}

type gmGenConfig struct {
	MaxOutputTokens int               `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *gmThinkingConfig `json:"thinkingConfig,omitempty"`
}

// gmThinkingConfig asks a thinking model to stream summaries of its
// thoughts: without them gemini-2.5-pro is silent while it thinks, long
// enough to trip the first-byte and idle limits.
type gmThinkingConfig struct {
	IncludeThoughts bool `json:"includeThoughts"`
}

// gmAnswer is a whole answer or one streamed chunk of it.
type gmAnswer struct {
	Candidates []struct {
		Content      gmContent `json:"content"`
		FinishReason string    `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *gmUsage `json:"usageMetadata"`
	// PromptFeedback says why a prompt was blocked before any answer.
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	// Error is how a stream reports a failure after it has begun.
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

type gmUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// usage counts the prompt, of it the cached part, and as output both the
// answer and the thinking, which Google bills as output.
func (u gmUsage) usage() Usage {
	return Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CacheReadTokens: min(u.CachedContentTokenCount, u.PromptTokenCount)}
}

func (c *client) geminiTurn(ctx context.Context, conv Conversation, tools []Tool, maxTokens int, stream bool, onText func(string)) (TurnResult, error) {
	req, err := geminiRequest(conv, tools, maxTokens, geminiModel{inlineSystem: !c.ToolCalling(), thinks: geminiThinks(c.spec.Model)})
	if err != nil {
		return TurnResult{}, err
	}
	method := ":generateContent"
	if stream {
		method = ":streamGenerateContent?alt=sse"
	}
	target := strings.TrimSuffix(c.endpoint, "/") + "/models/" + url.PathEscape(c.spec.Model) + method
	header := http.Header{}
	header.Set("x-goog-api-key", c.key)
	turn := assistantTurns(conv)
	res, err := exchangeTurn(ctx, c, target, header, req, stream,
		func(a gmAnswer) TurnResult {
			var g gmGathered
			g.add(a, nil)
			return g.result(turn)
		},
		func(body io.Reader) (TurnResult, error) {
			g, err := readGeminiStream(body, onText)
			return g.result(turn), err
		})
	if err != nil {
		return TurnResult{}, err
	}
	return res, geminiRefused(res)
}

// geminiModel is what a request depends on about the model: Gemma models
// refuse a system instruction ("Developer instruction is not enabled"),
// and only thinking models take a thinking config.
type geminiModel struct {
	inlineSystem bool
	thinks       bool
}

// geminiThinks reports whether a model thinks: the Gemini models from 2.5
// on. Gemma and the older Gemini models refuse a thinking config.
func geminiThinks(model string) bool {
	rest, ok := strings.CutPrefix(model, "gemini-")
	return ok && !strings.HasPrefix(rest, "1.") && !strings.HasPrefix(rest, "2.0") && !strings.HasPrefix(rest, "pro") && !strings.HasPrefix(rest, "exp")
}

// RefusedContentError is a Gemini answer withheld by the provider's
// filters: the prompt blocked (promptFeedback.blockReason) or the answer
// stopped for SAFETY, RECITATION and the like with nothing said. Asking
// again gets the same refusal.
type RefusedContentError struct {
	Reason string
	Prompt bool // the prompt was blocked, before any answer
}

func (e *RefusedContentError) Error() string {
	if e.Prompt {
		return fmt.Sprintf("blocked the prompt (%s): reword the task, or pick another model with --model", e.Reason)
	}
	return fmt.Sprintf("withheld its answer (finish reason %s): reword the task, or pick another model with --model", e.Reason)
}

// refusalFinishes are the finish reasons of an answer the provider's
// filters withheld.
var refusalFinishes = []string{"SAFETY", "PROHIBITED_CONTENT", "RECITATION", "BLOCKLIST", "SPII", "IMAGE_SAFETY"}

// geminiRefused returns the refusal of an answer that says nothing
// because the provider withheld it, else nil.
func geminiRefused(res TurnResult) error {
	if res.Text != "" || len(res.ToolCalls) > 0 {
		return nil
	}
	if reason, ok := strings.CutPrefix(res.ProviderStop, "blocked: "); ok {
		return &RefusedContentError{Reason: reason, Prompt: true}
	}
	if slices.Contains(refusalFinishes, res.ProviderStop) {
		return &RefusedContentError{Reason: res.ProviderStop}
	}
	return nil
}

// geminiRequest writes a turn's request: system messages join into the
// system instruction, or for a model refusing one, the first part of the
// first user content; every other message is a content of the user or the
// model, consecutive ones of one role merged as the API requires.
func geminiRequest(conv Conversation, tools []Tool, maxTokens int, model geminiModel) (gmRequest, error) {
	contents, system, err := geminiContents(conv)
	if err != nil {
		return gmRequest{}, err
	}
	req := gmRequest{Contents: contents}
	switch {
	case system == "":
	case model.inlineSystem: // Validate has the contents begin with the user
		contents[0].Parts = append([]gmPart{{Text: system + "\n\n"}}, contents[0].Parts...)
	default:
		req.SystemInstruction = &gmContent{Parts: []gmPart{{Text: system}}}
	}
	if maxTokens > 0 || model.thinks {
		req.GenerationConfig = &gmGenConfig{MaxOutputTokens: maxTokens}
	}
	if model.thinks {
		req.GenerationConfig.ThinkingConfig = &gmThinkingConfig{IncludeThoughts: true}
	}
	if len(tools) > 0 {
		var decls []gmFunction
		for _, t := range tools {
			decls = append(decls, gmFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
		req.Tools = []gmTool{{FunctionDeclarations: decls}}
		req.ToolConfig = &gmToolConf{}
		req.ToolConfig.FunctionCallingConfig.Mode = "AUTO"
	}
	return req, nil
}

// geminiContents writes the conversation as contents. A tool message is a
// functionResponse part named after its call; the results of one turn are
// sent in the order of its calls, which is how the API pairs them, whatever
// order they were appended in.
func geminiContents(conv Conversation) ([]gmContent, string, error) {
	var system []string
	var out []gmContent
	add := func(role string, parts ...gmPart) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		out = append(out, gmContent{Role: role, Parts: parts})
	}
	var order map[string]int // the calls of the last model turn, by id
	var results []gmPart     // their answers, in the order of the calls
	flush := func() {
		if len(results) > 0 {
			add("user", results...)
		}
		order, results = nil, nil
	}
	for i, m := range conv.Messages {
		if m.Role != RoleTool {
			flush()
		}
		switch m.Role {
		case RoleSystem:
			system = append(system, m.Text)
		case RoleUser:
			add("user", gmPart{Text: m.Text})
		case RoleAssistant:
			var parts []gmPart
			if m.Text != "" {
				parts = append(parts, gmPart{Text: m.Text})
			}
			order = make(map[string]int, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				args, err := argumentsObject(tc.Arguments)
				if err != nil {
					return nil, "", fmt.Errorf("%w: message %d: tool call %q arguments: %w", ErrBadConversation, i, tc.ID, err)
				}
				parts = append(parts, gmPart{FunctionCall: &gmCall{Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature})
				order[tc.ID] = j
			}
			results = make([]gmPart, len(m.ToolCalls))
			add("model", parts...)
		case RoleTool:
			j, ok := order[m.Result.CallID]
			if !ok { // Validate pairs every result with a call of the turn before
				return nil, "", fmt.Errorf("%w: message %d: result for call %q answers no call of the turn before", ErrBadConversation, i, m.Result.CallID)
			}
			key := "output"
			if m.Result.IsError {
				key = "error"
			}
			results[j] = gmPart{FunctionResponse: &gmResponse{Name: m.Result.Name, Response: map[string]string{key: m.Result.Content}}}
		}
	}
	flush()
	return out, strings.Join(system, "\n\n"), nil
}

// assistantTurns counts the model's turns so far; a turn's call ids carry
// it, so they differ from the ids of earlier turns.
func assistantTurns(conv Conversation) int {
	n := 0
	for _, m := range conv.Messages {
		if m.Role == RoleAssistant {
			n++
		}
	}
	return n
}

// gmGathered is an answer put together from its chunks (one for a whole
// answer): text, calls in order, the last finish reason and usage.
type gmGathered struct {
	text    strings.Builder
	calls   []gmPart // each with its FunctionCall
	finish  string
	blocked string
	usage   gmUsage
}

// add takes in one chunk; its text goes to onText when that is set.
// Thinking parts are the model's notes, not its answer: left out.
func (g *gmGathered) add(a gmAnswer, onText func(string)) {
	if a.UsageMetadata != nil {
		g.usage = *a.UsageMetadata
	}
	if a.PromptFeedback != nil && a.PromptFeedback.BlockReason != "" {
		g.blocked = a.PromptFeedback.BlockReason
	}
	if len(a.Candidates) == 0 {
		return
	}
	cand := a.Candidates[0]
	for _, p := range cand.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			g.calls = append(g.calls, p)
		case p.Thought:
		case p.Text != "":
			g.text.WriteString(p.Text)
			if onText != nil {
				onText(p.Text)
			}
		}
	}
	if cand.FinishReason != "" {
		g.finish = cand.FinishReason
	}
}

// result is the turn's answer; calls without an id of the model's get
// one made of the turn's number and their place in it.
func (g *gmGathered) result(turn int) TurnResult {
	res := TurnResult{Text: g.text.String(), Usage: g.usage.usage(), ProviderStop: g.finish}
	for i, p := range g.calls {
		gc := p.FunctionCall
		id := gc.ID
		if id == "" {
			id = fmt.Sprintf("gemini_%d_%d", turn, i)
		}
		args := strings.TrimSpace(string(gc.Args))
		if args == "" || args == "null" {
			args = "{}"
		}
		res.ToolCalls = append(res.ToolCalls, ToolCall{ID: id, Name: gc.Name, Arguments: args, Signature: p.ThoughtSignature})
	}
	switch {
	case len(res.ToolCalls) > 0: // Gemini says STOP after calls too
		res.StopReason = StopToolUse
	case g.finish == "STOP":
		res.StopReason = StopEnd
	case g.finish == "MAX_TOKENS":
		res.StopReason = StopMaxTokens
	default:
		res.StopReason = StopOther
	}
	if g.blocked != "" && res.ProviderStop == "" {
		res.ProviderStop = "blocked: " + g.blocked
	}
	return res
}

// readGeminiStream gathers a streamed answer (alt=sse): each event is a
// whole response object holding the next text and whole function calls;
// the last one carries the finish reason. The stream has no end marker,
// so an answer without a finish reason was cut short.
func readGeminiStream(body io.Reader, onText func(string)) (gmGathered, error) {
	var g gmGathered
	err := readEvents(body, func(data []byte) error {
		var a gmAnswer
		if err := json.Unmarshal(data, &a); err != nil {
			return fmt.Errorf("decode stream chunk: %w", err)
		}
		if a.Error != nil {
			return fmt.Errorf("stream failed: %s (%s)", a.Error.Message, a.Error.Status)
		}
		g.add(a, onText)
		return nil
	})
	if err != nil {
		return gmGathered{}, err
	}
	if g.finish == "" && g.blocked == "" {
		return gmGathered{}, errors.New("stream ended without a finish reason: the answer is incomplete")
	}
	return g, nil
}
