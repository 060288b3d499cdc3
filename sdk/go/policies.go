package taskring

import (
	"bytes"
	"encoding/json"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// The sources of a TypePolicy: where the entry in effect comes from.
const (
	PolicySourceAPI  = "api"  // an entry set through the API (Policies.Put), over the file's
	PolicySourceFile = "file" // the policies file's entry (TASKRING_RETRY_POLICIES)
	PolicySourceNone = "none" // nothing declared for the type: Policy is {}
)

// TypePolicy is one task type's entry of the policies file as in effect
// (Python's taskring.policies TypePolicy): its retry policy, unique key,
// concurrency limits, retry cap, rate limits, fair shares and heartbeat
// timeout, in the file's JSON shape (docs on the policies file). An entry set
// through the API replaces the file's entry for that type whole; deleting it
// gives the type back to the file.
//
// The policies are json.RawMessage, as CronRule.Payload is: the object exactly
// as the server sent it (key order, and integers beyond float64's 2^53, kept),
// to Decode into a struct of the caller's own or to send back to Put as it is.
type TypePolicy struct {
	Namespace string
	TaskType  string
	Policy    json.RawMessage // the entry in effect, a JSON object; {} when Source is "none"
	Source    string          // PolicySourceAPI, PolicySourceFile or PolicySourceNone
	Revision  int64           // the API entry's revision, for Put's and Delete's ifRevision; 0 when there is none
	UpdatedBy string          // who set the API entry (its token's name); "" when none
	UpdatedAt time.Time       // when; the zero time when there is no API entry
	// FilePolicy is the file's entry for the type, what Delete gives the type
	// back to; nil when the file has none.
	FilePolicy json.RawMessage
}

// Decode unmarshals the policy in effect into v.
func (p *TypePolicy) Decode(v any) error { return json.Unmarshal(p.Policy, v) }

// encodePolicy is the compact JSON text of a policy for the wire. Like a
// payload it must be a JSON object; unlike a payload, nothing is not {}: an
// empty API entry overrides the file's entry with no policy at all, so it has
// to be asked for by sending {} explicitly.
func encodePolicy(policy json.RawMessage) (string, *ValidationError) {
	if len(bytes.TrimSpace(policy)) == 0 {
		return "", invalid("policy_json", "must be a JSON object, got nothing (send {} for an empty entry)")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, policy); err != nil {
		return "", invalid("policy_json", "not valid JSON: %v", err)
	}
	if out.Bytes()[0] != '{' {
		return "", invalid("policy_json", "must be a JSON object, got %s", jsonKind(out.Bytes()))
	}
	return out.String(), nil
}

// typePolicyFromPB reads a policy entry from the server: policy_json ""
// reads as {}, file_policy_json "" as nil, updated_at "" as the zero time.
// Anything else that is not a JSON object, or a malformed time, is a
// *ProtocolError.
func typePolicyFromPB(m *pb.TypePolicy) (*TypePolicy, error) {
	policy, err := decodePayloadText(m.GetPolicyJson())
	if err != nil {
		return nil, &ProtocolError{Msg: "type policy policy_json is " + err.Error()}
	}
	p := &TypePolicy{
		Namespace: m.GetNamespace(), TaskType: m.GetTaskType(), Policy: policy, Source: m.GetSource(),
		Revision: m.GetRevision(), UpdatedBy: m.GetUpdatedBy(),
	}
	if text := m.GetFilePolicyJson(); text != "" {
		if p.FilePolicy, err = decodePayloadText(text); err != nil {
			return nil, &ProtocolError{Msg: "type policy file_policy_json is " + err.Error()}
		}
	}
	if p.UpdatedAt, err = parseInstant(m.GetUpdatedAt()); err != nil {
		return nil, err
	}
	return p, nil
}
