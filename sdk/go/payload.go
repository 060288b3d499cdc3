package taskring

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// encodePayload is the compact JSON text of a payload object; nil is "{}".
// json.RawMessage and []byte are taken as JSON text and only compacted, so the
// caller's key order survives (as a Python dict's does); other values go
// through encoding/json without HTML escaping, since Python's json.dumps does
// not escape <, > and & either.
func encodePayload(payload any) (string, *ValidationError) {
	var raw []byte
	switch p := payload.(type) {
	case nil:
		return "{}", nil
	case json.RawMessage:
		if p == nil {
			return "{}", nil
		}
		raw = p
	case []byte:
		if p == nil {
			return "{}", nil
		}
		raw = p
	case string:
		// A string is ambiguous (JSON text or a JSON string?); Python refuses a non-mapping too.
		return "", invalid("payload", "must be a mapping (a JSON object), got string; use json.RawMessage for JSON text")
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(payload); err != nil {
			return "", invalid("payload", "not encodable as JSON: %v", err)
		}
		raw = bytes.TrimRight(buf.Bytes(), "\n")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return "", invalid("payload", "not valid JSON: %v", err)
	}
	if out.Len() == 0 || out.Bytes()[0] != '{' {
		return "", invalid("payload", "must be a mapping (a JSON object), got %s", jsonKind(out.Bytes()))
	}
	return out.String(), nil
}

// jsonKind names the JSON type of valid, compact JSON text, for error messages.
func jsonKind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// decodePayloadText checks payload_json from the wire: a JSON object, "" meaning {}.
func decodePayloadText(text string) (json.RawMessage, error) {
	if text == "" {
		return json.RawMessage("{}"), nil
	}
	b := []byte(text)
	if !json.Valid(b) {
		return nil, fmt.Errorf("not valid JSON")
	}
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	return json.RawMessage(b), nil
}
