package taskring

import (
	"fmt"
	"strings"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/protobuf/proto"
)

// The one place that knows the wire's conventions, as _envelope.py in Python:
// payload as compact JSON text, durations as whole milliseconds rounded up,
// instants as RFC 3339 with the caller's offset, an unset field meaning "the
// server's default".

// specToPB checks a TaskSpec and builds its envelope.
func specToPB(s *TaskSpec) (*pb.Task, *ValidationError) {
	payload, verr := encodePayload(s.Payload)
	if verr != nil {
		return nil, verr
	}
	if verr := checkSpec(s); verr != nil {
		return nil, verr
	}
	t := &pb.Task{
		TaskId:         s.TaskID,
		Namespace:      s.Namespace,
		TaskType:       s.TaskType,
		PayloadJson:    payload,
		PayloadVersion: s.PayloadVersion,
		Priority:       prioritiesToPB[Priority(strings.ToLower(string(s.Priority)))],
		UniqueKey:      s.UniqueKey,
		TraceId:        s.TraceID,
	}
	if s.Delay != 0 {
		t.DelayMs = toMillis(s.Delay)
	}
	if !s.ScheduleTime.IsZero() {
		t.ScheduleTime = formatInstant(s.ScheduleTime)
	}
	if s.Timeout != 0 {
		t.TimeoutMs = proto.Uint32(uint32(toMillis(s.Timeout)))
	}
	if s.MaxRetries != nil {
		t.MaxRetries = proto.Int32(int32(*s.MaxRetries))
	}
	if s.RetryPolicy != nil {
		t.RetryPolicy = retryPolicyToPB(s.RetryPolicy)
	}
	return t, nil
}

// retryPolicyToPB sends either the schedule or the three backoff fields, never both (as Python).
func retryPolicyToPB(p *RetryPolicy) *pb.RetryPolicy {
	if len(p.Schedule) > 0 {
		ms := make([]uint64, len(p.Schedule))
		for i, w := range p.Schedule {
			ms[i] = toMillis(w)
		}
		return &pb.RetryPolicy{ScheduleMs: ms}
	}
	initial, capped, mult := p.resolved()
	return &pb.RetryPolicy{InitialBackoffMs: toMillis(initial), MaxBackoffMs: toMillis(capped), Multiplier: mult}
}

func submitResultFromPB(m *pb.SubmitResponse) (SubmitResult, error) {
	state, err := stateFromPB(m.GetState())
	if err != nil {
		return SubmitResult{}, err
	}
	due, err := parseInstant(m.GetDueAt())
	if err != nil {
		return SubmitResult{}, err
	}
	return SubmitResult{TaskID: m.GetTaskId(), Duplicate: m.GetDuplicate(), State: state, DueAt: due, Slot: m.GetSlot()}, nil
}

func taskInfoFromPB(m *pb.GetTaskResponse) (*TaskInfo, error) {
	t := m.GetTask()
	state, err := stateFromPB(m.GetState())
	if err != nil {
		return nil, err
	}
	payload, err := decodePayloadText(t.GetPayloadJson())
	if err != nil {
		return nil, &ProtocolError{Msg: "payload_json is " + err.Error()}
	}
	info := &TaskInfo{
		TaskID: t.GetTaskId(), Namespace: t.GetNamespace(), TaskType: t.GetTaskType(),
		State: state, Attempts: m.GetAttempts(), Slot: m.GetSlot(),
		Payload: payload, PayloadVersion: t.GetPayloadVersion(), Priority: priorityFromPB(t.GetPriority()),
		LastError: m.GetLastError(), LastStackTrace: m.GetLastStackTrace(), Waiting: m.GetWaiting(),
		UniqueKey: t.GetUniqueKey(), TraceID: t.GetTraceId(),
	}
	for _, f := range []struct {
		dst  *time.Time
		text string
	}{{&info.DueAt, m.GetDueAt()}, {&info.CreatedAt, t.GetCreatedAt()}, {&info.ScheduleTime, t.GetScheduleTime()}} {
		if *f.dst, err = parseInstant(f.text); err != nil {
			return nil, err
		}
	}
	if t.TimeoutMs != nil {
		info.Timeout = time.Duration(t.GetTimeoutMs()) * time.Millisecond
	}
	if t.MaxRetries != nil {
		n := int(t.GetMaxRetries())
		info.MaxRetries = &n
	}
	for _, ev := range m.GetHistory() {
		st, err := stateFromPB(ev.GetState())
		if err != nil {
			return nil, err
		}
		if ev.GetAt() == "" {
			return nil, &ProtocolError{Msg: "server sent an empty history.at"}
		}
		at, err := parseInstant(ev.GetAt())
		if err != nil {
			return nil, err
		}
		info.History = append(info.History, TaskEvent{State: st, At: at, Node: ev.GetNode(), Attempt: ev.GetAttempt(), Detail: ev.GetDetail()})
	}
	return info, nil
}

// batchResults checks that the server answered every task of the batch.
func batchResults(n int, m *pb.SubmitBatchResponse) ([]SubmitResult, error) {
	if len(m.GetResults()) != n {
		return nil, &ProtocolError{Msg: fmt.Sprintf("SubmitBatch returned %d results for %d tasks", len(m.GetResults()), n)}
	}
	out := make([]SubmitResult, n)
	for i, r := range m.GetResults() {
		var err error
		if out[i], err = submitResultFromPB(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}
