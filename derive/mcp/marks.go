package mcp

import (
	"fmt"

	"github.com/idemkey/idemkey/derive/ledger"
)

// markForwarded is the server's answer m to a call idemkey keyed, as the
// client gets it: a result carries the key and the attempt in its _meta,
// as a replay of it does, so that a client or harness reads the key from
// the first answer as from every later one. A JSON-RPC error, or a result
// that is not an object, is passed on as written (nil).
func markForwarded(m *message, key string, attempt int64) []byte {
	result := m.value(m.result)
	if m.err != nil || len(result) == 0 || result[skipSpace(result, 0)] != '{' {
		return nil
	}
	meta := setMembers(objectMember(result, "_meta"), kv{MetaKey, quoted(key)}, kv{MetaAttempt, number(attempt)})
	return setMembers(m.raw, kv{"result", setMembers(result, kv{"_meta", meta})})
}

// replayNoteText is the text item a replayed result ends with when the
// tool's replay note is on: what the model reads, so that a repeat it
// meant (a toggle, a second message) is not taken for done twice.
func replayNoteText(rec *ledger.Record) string {
	return fmt.Sprintf("[idemkey] This is the recorded result of an identical earlier call in this task (made once, at %s); it was not run again. "+
		"To make a new call, change an argument.", stamp(rec.EndedAt))
}

// replayed is the answer a succeeded record gives a repeat of its call:
// the recorded result marked as replayed, and with the tool's replay note
// on, one text item after the server's own content.
func (p *Proxy) replayed(c *call, rec *ledger.Record) []byte {
	r := replayResult(rec)
	if !c.pol.ReplayNote {
		return r
	}
	content := objectMember(r, "content")
	if len(content) == 0 || content[0] != '[' {
		content = []byte("[]")
	}
	item := `{"type":"text","text":` + string(quoted(replayNoteText(rec))) + `}`
	els := elements(content, 0)
	parts := make([][]byte, 0, len(els)+1)
	for _, e := range els {
		parts = append(parts, content[e[0]:e[1]])
	}
	return setMembers(r, kv{"content", joinArray(append(parts, []byte(item)))})
}
