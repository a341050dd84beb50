package probe

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// mcpdesc.go is the description rule: what a tool's description and its
// parameters' descriptions tell a model to do with a key. A key made
// fresh for every call defeats it: a retry carries a new key and makes a
// second effect.

// descRegexps are the rule's patterns, compiled on first use (not at
// every idemkey invocation's start).
var descRegexps = sync.OnceValue(func() *descPatterns {
	return &descPatterns{
		// keyParam matches the name of a parameter that carries a key.
		keyParam: regexp.MustCompile(`(?i)(idempot|dedup|nonce|request_?id|client_?(request_?)?token|^key$)`),
		// keyWords matches text about keys (a sentence the rule reads).
		keyWords: regexp.MustCompile(`(?i)\b(idempot\w*|dedup\w*|duplicate\w*|keys?|uuids?|guids?|nonces?|request[ _-]?ids?)\b`),
		// fresh: a key made new for every call.
		fresh: []*regexp.Regexp{
			regexp.MustCompile(`(?i)\b(generate|create|mint|make|use|provide|pass|supply|send|include)s?\b[^.;\n]{0,40}\b(new|unique|fresh|random|different)\b[^.;\n]{0,40}\b(key|uuid|guid|nonce|token|id)s?\b`),
			regexp.MustCompile(`(?i)\b(new|unique|fresh|random|different)\b[^.;\n]{0,40}\b(key|uuid|guid|nonce|token|id)s?\b[^.;\n]{0,40}\b(each|every|per)\b[^.;\n]{0,20}\b(request|call|invocation|time|attempt|charge|payment|operation|message)s?\b`),
		},
		// keep: the same key on a retry.
		keep: []*regexp.Regexp{
			regexp.MustCompile(`(?i)\b(same|reuse|re-use|keep|unchanged|identical)\b[^.;\n]{0,60}\b(retr(y|ies|ied|ying)|again|resend|resent|repeat\w*)\b`),
			regexp.MustCompile(`(?i)\b(retr(y|ies|ied|ying)|resend\w*|repeat\w*)\b[^.;\n]{0,60}\b(same|reuse|re-use|keep|unchanged|identical)\b`),
		},
		sentenceEnd: regexp.MustCompile(`[.;!?\n]+\s*`),
	}
})

type descPatterns struct {
	keyParam, keyWords, sentenceEnd *regexp.Regexp
	fresh, keep                     []*regexp.Regexp
}

// textOf is one description and whether it belongs to a key parameter.
type textOf struct {
	where string // "the description", "parameter NAME"
	text  string
	key   bool
}

// describe judges a tool's descriptions.
func describe(t *mcpTool) Result {
	re := descRegexps()
	texts := []textOf{{where: "the description", text: t.Description}}
	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(t.InputSchema, &schema)
	var params []string
	for name := range schema.Properties {
		params = append(params, name)
	}
	sort.Strings(params)
	var keyParams []string
	for _, name := range params {
		isKey := re.keyParam.MatchString(name)
		if isKey {
			keyParams = append(keyParams, name)
		}
		texts = append(texts, textOf{where: "parameter " + name, text: schema.Properties[name].Description, key: isKey})
	}
	var fresh, keep []string
	for _, tx := range texts {
		for _, s := range re.sentenceEnd.Split(tx.text, -1) {
			s = strings.TrimSpace(s)
			if s == "" || !(tx.key || re.keyWords.MatchString(s)) {
				continue
			}
			if matchAny(re.keep, s) {
				keep = append(keep, tx.where+": "+quote(s))
			} else if matchAny(re.fresh, s) {
				fresh = append(fresh, tx.where+": "+quote(s))
			}
		}
	}
	switch {
	case len(fresh) > 0:
		return Result{Rule: Description, Verdict: Fail, Evidence: "it tells the model to make a new key for every call, so a retry carries another key: " + strings.Join(fresh, "; ")}
	case len(keep) > 0:
		return Result{Rule: Description, Verdict: Pass, Evidence: "it asks for the same key on a retry: " + strings.Join(keep, "; ")}
	case len(keyParams) > 0:
		return Result{Rule: Description, Verdict: Info, Evidence: "a key parameter (" + strings.Join(keyParams, ", ") + ") whose descriptions say nothing about retries"}
	}
	return Result{Rule: Description, Verdict: Info, Evidence: "no key parameter, and the descriptions say nothing about keys"}
}

func matchAny(rs []*regexp.Regexp, s string) bool {
	for _, r := range rs {
		if r.MatchString(s) {
			return true
		}
	}
	return false
}
