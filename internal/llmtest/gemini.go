package llmtest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// GeminiPart is one part of a Gemini content: text, a function call
// (Call, whose ID is always empty: the API gives calls none) or a function
// response (Response, its Output or Error as the client sent them).
type GeminiPart struct {
	Text     string
	Call     *ToolCall
	Response *GeminiResponse
	// Signature is the part's thoughtSignature.
	Signature string
}

// GeminiResponse is a functionResponse part.
type GeminiResponse struct {
	Name   string
	Output string // response.output
	Error  string // response.error
}

// GeminiContent is one content of a request: role "user" or "model".
type GeminiContent struct {
	Role  string
	Parts []GeminiPart
}

// GeminiRequest is what a client sent to generateContent or
// streamGenerateContent, decoded.
type GeminiRequest struct {
	Model     string // from the path
	Stream    bool   // streamGenerateContent with alt=sse
	System    string // systemInstruction's text
	Contents  []GeminiContent
	Tools     []ToolDef
	MaxTokens int // generationConfig.maxOutputTokens
	// IncludeThoughts is generationConfig.thinkingConfig.includeThoughts.
	IncludeThoughts bool
	APIKey          string // x-goog-api-key
	// Body is the request body as the client sent it.
	Body []byte
	// PromptTokens is the whole prompt's count; CachedTokens the part of
	// it the server had seen before (cachedContentTokenCount).
	PromptTokens int
	CachedTokens int
	units        []promptUnit
}

// LastUser returns the text of the last user content.
func (r GeminiRequest) LastUser() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		if c := r.Contents[i]; c.Role == "user" {
			var b strings.Builder
			for _, p := range c.Parts {
				b.WriteString(p.Text)
			}
			return b.String()
		}
	}
	return ""
}

// FunctionResponses returns the functionResponse parts of the last content.
func (r GeminiRequest) FunctionResponses() []GeminiResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	var out []GeminiResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.Response != nil {
			out = append(out, *p.Response)
		}
	}
	return out
}

// GeminiScript chooses the reply to a request. Reply.Content becomes a
// text part and each of Reply.ToolCalls a functionCall part after it,
// without its ID, as the API sends calls. It may be called concurrently.
type GeminiScript func(req GeminiRequest) Reply

// GeminiServer is a running scripted Gemini API, closed when the test ends.
type GeminiServer struct {
	served[GeminiRequest]
}

// NewGemini starts a server answering generateContent with script.
func NewGemini(t testing.TB, script GeminiScript) *GeminiServer {
	t.Helper()
	return &GeminiServer{serve(t, newGeminiHandler(script))}
}

// URL is the base URL to point a client at (GEMINI_BASE_URL): the API up
// to its version, /v1beta.
func (s *GeminiServer) URL() string { return s.srv.URL + "/v1beta" }

// GeminiHandler serves script at /v1beta/models/MODEL:generateContent and
// :streamGenerateContent, and the same without /v1beta.
func GeminiHandler(script GeminiScript) http.Handler { return newGeminiHandler(script) }

// geminiPath is a generateContent path: the model and the method.
var geminiPath = regexp.MustCompile(`^(?:/v1beta)?/models/([^/:]+):(generateContent|streamGenerateContent)$`)

func newGeminiHandler(script GeminiScript) *protocolHandler[GeminiRequest] {
	return &protocolHandler[GeminiRequest]{script: script, proto: protocol[GeminiRequest]{
		route: geminiPath.MatchString, decode: decodeGemini, fail: writeGeminiError, answer: answerGemini,
		check: func(req GeminiRequest) string { return pairedFunctionCalls(req.Contents) },
		cache: func(c *promptCache, req *GeminiRequest) {
			req.PromptTokens = promptPriming
			for _, u := range req.units {
				req.PromptTokens += u.Tokens
			}
			req.CachedTokens = c.automatic(req.units, promptPriming)
		},
	}}
}

// answerGemini answers a request, whole or as an event stream.
func answerGemini(w http.ResponseWriter, _ *http.Request, n int, req GeminiRequest, reply Reply) {
	out := CountTokens(reply.Content) + callTokens(reply.ToolCalls)
	usage := map[string]any{"promptTokenCount": req.PromptTokens, "candidatesTokenCount": out,
		"totalTokenCount": req.PromptTokens + out}
	if req.CachedTokens > 0 {
		usage["cachedContentTokenCount"] = req.CachedTokens
	}
	id := fmt.Sprintf("llmtest-%d", n)
	response := func(parts []map[string]any, finish string, usage map[string]any) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		r := map[string]any{"candidates": []any{cand}, "modelVersion": req.Model, "responseId": id}
		if usage != nil {
			r["usageMetadata"] = usage
		}
		return r
	}
	if reply.BlockReason != "" {
		writeGeminiBlocked(w, req, reply.BlockReason, usage)
		return
	}
	finish := cmp.Or(reply.FinishReason, "STOP")
	var thoughts []map[string]any
	if reply.Thoughts != "" && req.IncludeThoughts {
		thoughts = append(thoughts, map[string]any{"text": reply.Thoughts, "thought": true})
	}
	calls := make([]map[string]any, 0, len(reply.ToolCalls))
	for _, c := range reply.ToolCalls {
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(cmp.Or(c.Arguments, "{}"))}})
	}
	if !req.Stream {
		parts := thoughts
		if reply.Content != "" {
			parts = append(parts, map[string]any{"text": reply.Content})
		}
		writeJSON(w, http.StatusOK, response(append(parts, calls...), finish, usage))
		return
	}
	// As the API streams: text in pieces, each event a whole response
	// with the usage so far; the calls whole, together in one event; the
	// finish reason and the final usage in the last.
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v map[string]any) {
		b, _ := json.Marshal(v) // plain maps always marshal
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	partial := map[string]any{"promptTokenCount": req.PromptTokens, "totalTokenCount": req.PromptTokens}
	if len(thoughts) > 0 {
		send(response(thoughts, "", partial))
	}
	for _, piece := range splitChunks(reply.Content, cmp.Or(reply.ChunkBytes, chunkBytes)) {
		send(response([]map[string]any{{"text": piece}}, "", partial))
	}
	if len(calls) > 0 {
		send(response(calls, finish, usage))
		return
	}
	send(response([]map[string]any{{"text": ""}}, finish, usage))
}

// writeGeminiBlocked answers as the API does a prompt it blocks: no
// candidate, the reason in promptFeedback; streamed, one event of it.
func writeGeminiBlocked(w http.ResponseWriter, req GeminiRequest, reason string, usage map[string]any) {
	body := map[string]any{"promptFeedback": map[string]any{"blockReason": reason}, "usageMetadata": usage, "modelVersion": req.Model}
	if !req.Stream {
		writeJSON(w, http.StatusOK, body)
		return
	}
	b, _ := json.Marshal(body) // plain maps always marshal
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
}

// pairedFunctionCalls checks, as the API does, that the contents begin
// with the user, alternate between user and model, and that a model turn's
// function calls are answered by the next content with as many function
// responses, of the same names in the same order. It returns the API's
// complaint.
func pairedFunctionCalls(contents []GeminiContent) string {
	if len(contents) > 0 && contents[0].Role != "user" {
		return "Please ensure that multiturn requests start with a user turn."
	}
	var calls []string // the names of the last model turn's calls, in order
	for i, c := range contents {
		if i > 0 && c.Role == contents[i-1].Role {
			return "Please ensure that multiturn requests alternate between user and model."
		}
		var names, answered []string
		for _, p := range c.Parts {
			switch {
			case p.Call != nil:
				names = append(names, p.Call.Name)
			case p.Response != nil:
				answered = append(answered, p.Response.Name)
			}
		}
		if c.Role == "model" {
			calls = names
			continue
		}
		if len(answered) != len(calls) {
			return fmt.Sprintf("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn (contents[%d]: %d responses, %d calls).",
				i, len(answered), len(calls))
		}
		for j := range calls {
			if answered[j] != calls[j] {
				return fmt.Sprintf("contents[%d].parts: function response %d is for %q, but function call %d of the turn before called %q.", i, j, answered[j], j, calls[j])
			}
		}
		calls = nil
	}
	return ""
}

type wireGemini struct {
	SystemInstruction *wireGeminiContent  `json:"systemInstruction"`
	Contents          []wireGeminiContent `json:"contents"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Description          string          `json:"description"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
		ThinkingConfig  struct {
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

type wireGeminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         *string `json:"text"`
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
		ThoughtSignature string `json:"thoughtSignature"`
	} `json:"parts"`
}

// unsupportedSchema returns a keyword the API refuses in a tool's
// "parameters" (an OpenAPI subset of JSON schema), at any depth, or "".
// The names of properties are the tool's own, not keywords.
// parametersJsonSchema takes them all.
func unsupportedSchema(raw json.RawMessage) string {
	var schema any
	if json.Unmarshal(raw, &schema) != nil {
		return ""
	}
	var find func(v any) string
	find = func(v any) string {
		switch s := v.(type) {
		case map[string]any:
			for _, k := range []string{"$schema", "additionalProperties"} {
				if _, ok := s[k]; ok {
					return k
				}
			}
			for k, sub := range s {
				if props, ok := sub.(map[string]any); ok && k == "properties" {
					for _, p := range props {
						if bad := find(p); bad != "" {
							return bad
						}
					}
					continue
				}
				if bad := find(sub); bad != "" {
					return bad
				}
			}
		case []any:
			for _, sub := range s {
				if bad := find(sub); bad != "" {
					return bad
				}
			}
		}
		return ""
	}
	return find(schema)
}

func decodeGemini(r *http.Request) (GeminiRequest, error) {
	if r.Header.Get("x-goog-api-key") == "" && r.URL.Query().Get("key") == "" {
		return GeminiRequest{}, &statusError{http.StatusForbidden,
			"Method doesn't allow unregistered callers (callers without established identity). Please use API key or other form of API consumer identity to call this API."}
	}
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	req := GeminiRequest{Model: m[1], Stream: m[2] == "streamGenerateContent", APIKey: r.Header.Get("x-goog-api-key")}
	if req.Stream && r.URL.Query().Get("alt") != "sse" {
		return GeminiRequest{}, errors.New("llmtest: streamGenerateContent is served only as server-sent events (alt=sse)")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return GeminiRequest{}, fmt.Errorf("read request body: %w", err)
	}
	req.Body = body
	var w wireGemini
	if err := json.Unmarshal(body, &w); err != nil {
		return GeminiRequest{}, fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	if len(w.Contents) == 0 {
		return GeminiRequest{}, errors.New("* GenerateContentRequest.contents: contents is not specified")
	}
	req.MaxTokens = w.GenerationConfig.MaxOutputTokens
	req.IncludeThoughts = w.GenerationConfig.ThinkingConfig.IncludeThoughts
	if w.SystemInstruction != nil && strings.HasPrefix(req.Model, "gemma") {
		return GeminiRequest{}, fmt.Errorf("Developer instruction is not enabled for models/%s", req.Model)
	}
	if s := w.SystemInstruction; s != nil {
		for _, p := range s.Parts {
			if p.Text != nil {
				req.System += *p.Text
			}
		}
		req.units = append(req.units, promptUnit{Key: []byte("system\x00" + req.System), Tokens: CountTokens(req.System)})
	}
	for i, t := range w.Tools {
		for j, f := range t.FunctionDeclarations {
			if f.Name == "" {
				return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.tools[%d].function_declarations[%d].name: Invalid function name", i, j)
			}
			if len(f.Parameters) > 0 && len(f.ParametersJSONSchema) > 0 {
				return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.tools[%d].function_declarations[%d]: parameters and parameters_json_schema must not both be set", i, j)
			}
			if k := unsupportedSchema(f.Parameters); k != "" {
				return GeminiRequest{}, fmt.Errorf("Invalid JSON payload received. Unknown name %q at 'tools[%d].function_declarations[%d].parameters': Cannot find field.", k, i, j)
			}
			params := f.ParametersJSONSchema
			if len(params) == 0 {
				params = f.Parameters
			}
			req.Tools = append(req.Tools, ToolDef{Name: f.Name, Description: f.Description, Parameters: params})
		}
	}
	for i, c := range w.Contents {
		if c.Role != "user" && c.Role != "model" {
			return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.contents[%d].role: Please use a valid role: user, model.", i)
		}
		if len(c.Parts) == 0 {
			return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		content := GeminiContent{Role: c.Role}
		tokens := 3
		for j, p := range c.Parts {
			part := GeminiPart{Signature: p.ThoughtSignature}
			switch {
			case p.Text != nil:
				part.Text = *p.Text
				tokens += CountTokens(part.Text)
			case p.FunctionCall != nil:
				var obj map[string]any
				if p.FunctionCall.Name == "" || (len(p.FunctionCall.Args) > 0 && (json.Unmarshal(p.FunctionCall.Args, &obj) != nil || obj == nil)) {
					return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.contents[%d].parts[%d].function_call: name and an object args are required", i, j)
				}
				part.Call = &ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: cmp.Or(string(p.FunctionCall.Args), "{}")}
				tokens += CountTokens(part.Call.Name) + CountTokens(part.Call.Arguments)
			case p.FunctionResponse != nil:
				var resp map[string]json.RawMessage
				if p.FunctionResponse.Name == "" || json.Unmarshal(p.FunctionResponse.Response, &resp) != nil || resp == nil {
					return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.contents[%d].parts[%d].function_response: name and an object response are required", i, j)
				}
				fr := &GeminiResponse{Name: p.FunctionResponse.Name}
				_ = json.Unmarshal(resp["output"], &fr.Output) // a response without it is the client's choice
				_ = json.Unmarshal(resp["error"], &fr.Error)
				part.Response = fr
				tokens += CountTokens(fr.Name) + CountTokens(string(p.FunctionResponse.Response))
			default:
				return GeminiRequest{}, fmt.Errorf("* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field", i, j)
			}
			content.Parts = append(content.Parts, part)
		}
		raw, _ := json.Marshal(c) // decoded JSON always marshals
		req.units = append(req.units, promptUnit{Key: raw, Tokens: tokens})
		req.Contents = append(req.Contents, content)
	}
	return req, nil
}

// InvalidGeminiKey is the message of the API's answer to a key it does not
// know: a reply of status 400 with it as Content carries the error detail
// saying so (reason API_KEY_INVALID), as the API's does.
const InvalidGeminiKey = "API key not valid. Please pass a valid API key."

// writeGeminiError answers like the API does on failure: the HTTP status,
// its code and the canonical status name; a reply's RetryAfter (seconds)
// goes into the body as a RetryInfo detail.
func writeGeminiError(w http.ResponseWriter, status int, msg string) {
	name := "INVALID_ARGUMENT"
	switch {
	case status == http.StatusUnauthorized:
		name = "UNAUTHENTICATED"
	case status == http.StatusForbidden:
		name = "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		name = "NOT_FOUND"
	case status == http.StatusTooManyRequests:
		name = "RESOURCE_EXHAUSTED"
		if msg == "" {
			msg = "Resource has been exhausted (e.g. check quota)."
		}
	case status == http.StatusServiceUnavailable:
		name = "UNAVAILABLE"
		if msg == "" {
			msg = "The model is overloaded. Please try again later."
		}
	case status == http.StatusGatewayTimeout:
		name = "DEADLINE_EXCEEDED"
	case status >= 500:
		name = "INTERNAL"
		if msg == "" {
			msg = "An internal error has occurred. Please retry or report in the troubleshooting guide."
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	body := map[string]any{"code": status, "message": msg, "status": name}
	if status == http.StatusBadRequest && msg == InvalidGeminiKey {
		body["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}
	}
	// The API names a 429's wait in the body, not in a Retry-After header.
	if wait := w.Header().Get("Retry-After"); wait != "" && status == http.StatusTooManyRequests {
		w.Header().Del("Retry-After")
		body["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": wait + "s"}}
	}
	writeJSON(w, status, map[string]any{"error": body})
}
