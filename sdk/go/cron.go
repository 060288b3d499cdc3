package taskring

import (
	"encoding/json"
	"math"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/protobuf/proto"
)

// CronRuleSpec is what a cron rule is: the argument of CronRules.Create and
// .Update (Python's taskring.cron.CronRuleSpec). A rule creates one task per
// fire time, cluster-wide, in the rule's time zone. Zero values mean "not
// given": the server fills in its defaults and returns the rule normalised.
// As in Python, the client checks only what the wire cannot carry; the server
// judges the rest (names, schedule, zone, policies) and refuses with an
// *InvalidArgumentError naming the field, e.g. "rule.time_zone".
type CronRuleSpec struct {
	Namespace string
	Name      string // [a-z0-9][a-z0-9._-]{0,63}, unique in the namespace
	TaskType  string // the task each fire creates; fixed for the rule's life (it decides the rule's slot)

	// Schedule has 5 fields (minute hour day-of-month month day-of-week), or 6
	// with seconds first; it may start with "CRON_TZ=<zone> " instead of TimeZone.
	Schedule string
	TimeZone string // an IANA zone ("Europe/London"); required unless Schedule has CRON_TZ=

	// Payload is each fire task's payload, a JSON object as in TaskSpec.Payload
	// (a map, a struct, json.RawMessage / []byte holding an object); nil is {}.
	Payload any

	OnRepeatedHour string // "once" | "twice"; "" lets the schedule decide (docs/cron.md)
	OnSkippedHour  string // "at_shift" | "skip"; "" lets the schedule decide
	CatchUp        string // after an outage: "skip", "latest" (the default) or "all" up to CatchUpLimit
	CatchUpLimit   uint32 // most missed fires "all" creates (0: the server's default, 100)
	Overlap        string // while the previous fire is live: "allow" (default), "skip" or "queue_one"
	OwnerTeam      string
	Description    string

	// Timeout is each fire task's per-attempt timeout and MaxRetries its
	// retries; nil means the server's default. Pointers, unlike TaskSpec's
	// Timeout, because a rule read back must tell "unset" from a value.
	Timeout    *time.Duration
	MaxRetries *int
}

// CronRule is a rule as stored (normalised: the zone and every policy filled
// in) with its state (Python's CronRuleInfo). A zero time means the server
// sent none.
type CronRule struct {
	Namespace      string
	Name           string
	TaskType       string
	Schedule       string
	TimeZone       string
	Payload        json.RawMessage // the JSON object as the server stores it
	OnRepeatedHour string
	OnSkippedHour  string
	CatchUp        string
	CatchUpLimit   uint32
	Overlap        string
	OwnerTeam      string
	Description    string
	Timeout        *time.Duration // nil: unset (the server's default applies to each fire)
	MaxRetries     *int           // nil: unset

	Paused         bool
	NextFireTime   time.Time // the next fire time after now; zero when paused
	LastFireTime   time.Time // the latest fire time, not after now, that has its task; zero when none
	LastFireTaskID string    // that fire's task (Client.Get shows it); "" when none
	LastFireState  TaskState // that task's state; "" when there is no last fire
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Spec is the rule's spec, e.g. to change one field and Update it.
func (r *CronRule) Spec() CronRuleSpec {
	return CronRuleSpec{
		Namespace: r.Namespace, Name: r.Name, TaskType: r.TaskType, Schedule: r.Schedule, TimeZone: r.TimeZone,
		Payload: r.Payload, OnRepeatedHour: r.OnRepeatedHour, OnSkippedHour: r.OnSkippedHour, CatchUp: r.CatchUp,
		CatchUpLimit: r.CatchUpLimit, Overlap: r.Overlap, OwnerTeam: r.OwnerTeam, Description: r.Description,
		Timeout: r.Timeout, MaxRetries: r.MaxRetries,
	}
}

// Decode unmarshals the rule's payload into v.
func (r *CronRule) Decode(v any) error { return json.Unmarshal(r.Payload, v) }

// cronSpecToPB builds the wire rule. Like Python's CronRuleSpec.to_pb it
// refuses only what the message cannot hold: a payload that is not a JSON
// object, a negative or too long timeout, retries beyond int32.
func cronSpecToPB(s *CronRuleSpec) (*pb.CronRule, *ValidationError) {
	payload, verr := encodePayload(s.Payload)
	if verr != nil {
		return nil, verr
	}
	r := &pb.CronRule{
		Namespace: s.Namespace, Name: s.Name, TaskType: s.TaskType, PayloadJson: payload,
		Schedule: s.Schedule, TimeZone: s.TimeZone, OnRepeatedHour: s.OnRepeatedHour, OnSkippedHour: s.OnSkippedHour,
		CatchUp: s.CatchUp, CatchUpLimit: s.CatchUpLimit, Overlap: s.Overlap, OwnerTeam: s.OwnerTeam,
		Description: s.Description,
	}
	if s.Timeout != nil {
		d := *s.Timeout
		if d < 0 {
			return nil, invalid("timeout", "must not be negative, got %s", d)
		}
		ms := toMillis(d)
		if ms > uint32Max {
			return nil, invalid("timeout", "must be at most %d ms", uint32(uint32Max))
		}
		r.TimeoutMs = proto.Uint32(uint32(ms))
	}
	if s.MaxRetries != nil {
		if *s.MaxRetries < math.MinInt32 || *s.MaxRetries > math.MaxInt32 {
			return nil, invalid("max_retries", "out of the int32 range")
		}
		r.MaxRetries = proto.Int32(int32(*s.MaxRetries))
	}
	return r, nil
}

// cronRuleFromPB reads a rule from the server. As in Python, the last fire's
// state is read only when there is a last fire, and a state or time this SDK
// does not know is a *ProtocolError.
func cronRuleFromPB(m *pb.CronRule) (*CronRule, error) {
	payload, err := decodePayloadText(m.GetPayloadJson())
	if err != nil {
		return nil, &ProtocolError{Msg: "cron rule payload_json is " + err.Error()}
	}
	r := &CronRule{
		Namespace: m.GetNamespace(), Name: m.GetName(), TaskType: m.GetTaskType(), Schedule: m.GetSchedule(),
		TimeZone: m.GetTimeZone(), Payload: payload, OnRepeatedHour: m.GetOnRepeatedHour(),
		OnSkippedHour: m.GetOnSkippedHour(), CatchUp: m.GetCatchUp(), CatchUpLimit: m.GetCatchUpLimit(),
		Overlap: m.GetOverlap(), OwnerTeam: m.GetOwnerTeam(), Description: m.GetDescription(),
		Paused: m.GetPaused(), LastFireTaskID: m.GetLastFireTaskId(),
	}
	if m.TimeoutMs != nil {
		d := time.Duration(m.GetTimeoutMs()) * time.Millisecond
		r.Timeout = &d
	}
	if m.MaxRetries != nil {
		n := int(m.GetMaxRetries())
		r.MaxRetries = &n
	}
	if r.LastFireTaskID != "" {
		if r.LastFireState, err = stateFromPB(m.GetLastFireState()); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		dst  *time.Time
		text string
	}{{&r.NextFireTime, m.GetNextFireTime()}, {&r.LastFireTime, m.GetLastFireTime()},
		{&r.CreatedAt, m.GetCreatedAt()}, {&r.UpdatedAt, m.GetUpdatedAt()}} {
		if *f.dst, err = parseInstant(f.text); err != nil {
			return nil, err
		}
	}
	return r, nil
}
