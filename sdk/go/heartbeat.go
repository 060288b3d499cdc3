package taskring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// Heartbeats (issue 21, item 6; the contract all SDKs share). A running
// attempt says it is alive by heartbeats up its Work stream; every heartbeat
// gets an answer down it. CONTINUE extends the attempt's lease, INVALID
// refuses the heartbeat alone, CANCEL and LOST stop the attempt: its ctx is
// cancelled with a *TaskStoppedError as the cause, later heartbeats fail with
// it, and its outcome is STOPPED whatever the handler returns.
//
// Hot path: a delivery without a heartbeat timeout costs nothing more until
// its handler calls Heartbeat (the state below lives in the Task, which is
// allocated anyway, and a beat is made on the first call), and one lock of
// its stream's mutex when it ends.

// maxDetailsBytes is the dispatcher's limit on a heartbeat's details (JSON text).
const maxDetailsBytes = 65536

// ErrTaskCancelled and ErrAttemptLost are what a *TaskStoppedError matches
// with errors.Is: the task was cancelled while it ran, or the dispatcher no
// longer counts this attempt as the task's running one (its lease ran out and
// it was recovered, the task finished, or the dispatcher does not know it).
var (
	ErrTaskCancelled = errors.New("taskring: the task was cancelled")
	ErrAttemptLost   = errors.New("taskring: the attempt was lost")
)

// TaskStoppedError is how a heartbeat's answer stopped an attempt: it is the
// cause of the handler's ctx (context.Cause) and the error of every later
// Heartbeat call. Err is ErrTaskCancelled or ErrAttemptLost.
type TaskStoppedError struct {
	Err    error
	Reason string // the dispatcher's words
}

func (e *TaskStoppedError) Error() string { return "taskring: attempt stopped: " + e.outcomeText() }

// Unwrap returns ErrTaskCancelled or ErrAttemptLost, for errors.Is.
func (e *TaskStoppedError) Unwrap() error { return e.Err }

// outcomeText is the STOPPED outcome's error, "cancelled: <reason>" or "lost: <reason>".
func (e *TaskStoppedError) outcomeText() string {
	verdict := "cancelled"
	if errors.Is(e.Err, ErrAttemptLost) {
		verdict = "lost"
	}
	if e.Reason == "" {
		return verdict
	}
	return verdict + ": " + e.Reason
}

// Heartbeat tells the dispatcher the attempt is alive, with details to
// resume from: the next attempt of the task gets the last ones in
// LastHeartbeatDetails. details is any value encoding/json takes
// (json.RawMessage and []byte are taken as JSON text), at most 65,536 bytes
// of JSON; nil keeps the last details. It queues the heartbeat and returns
// without waiting for the answer; an answer that stops the attempt cancels
// ctx instead.
//
// It fails, sending nothing, with a *ValidationError (Field "details") for
// details it cannot send, and with a *TaskStoppedError once an answer said
// CANCEL or LOST. A delivery that came by an Execute call has no stream to
// send on (the dispatcher only asks for heartbeats on Work streams), nor has
// an attempt whose outcome is already sent: then it sends nothing and
// returns nil. Safe from several goroutines.
func (t *Task) Heartbeat(details any) error {
	text, err := encodeDetails(details)
	if err != nil {
		return err
	}
	if t.stream == nil {
		return nil
	}
	return t.stream.heartbeat(t, text)
}

// DecodeLastHeartbeatDetails unmarshals LastHeartbeatDetails into v and
// reports whether there were any (false for a first attempt, or one whose
// predecessors sent no details).
func (t *Task) DecodeLastHeartbeatDetails(v any) (bool, error) {
	if t.LastHeartbeatDetails == "" {
		return false, nil
	}
	return true, json.Unmarshal([]byte(t.LastHeartbeatDetails), v)
}

// encodeDetails is the compact JSON text of details, "" for nil (a nil
// json.RawMessage too), as encodePayload does for a payload but for any JSON value.
func encodeDetails(details any) (string, error) {
	text, problem := compactJSONValue(details)
	if problem != "" {
		return "", invalid("details", "%s", problem)
	}
	if len(text) > maxDetailsBytes {
		return "", invalid("details", "%d bytes of JSON, more than the %d allowed", len(text), maxDetailsBytes)
	}
	return text, nil
}

// compactJSONValue is the compact JSON text of v, "" for nil (a nil
// json.RawMessage or []byte too), or why v is not JSON. json.RawMessage and
// []byte are taken as JSON text and only compacted; other values go through
// encoding/json without HTML escaping, as Python's json.dumps. Heartbeat
// details and handler results share it, so both accept the same values.
func compactJSONValue(v any) (text string, problem string) {
	var raw []byte
	switch d := v.(type) {
	case nil:
		return "", ""
	case json.RawMessage:
		if d == nil {
			return "", ""
		}
		raw = d
	case []byte:
		if d == nil {
			return "", ""
		}
		raw = d
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", fmt.Sprintf("not encodable as JSON: %v", err)
		}
		raw = bytes.TrimRight(buf.Bytes(), "\n")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return "", fmt.Sprintf("not valid JSON: %v", err)
	}
	return out.String(), ""
}

// beatStream is one Work stream's side of heartbeats: it numbers them,
// queues them for the stream's sender, and routes answers to the running
// attempts they concern. mu also guards the heartbeat fields of the Tasks
// run on the stream, since a handler's goroutines may call Heartbeat while
// the runner ends the attempt.
type beatStream struct {
	send func(*pb.Heartbeat) // queues for the sender; drops once the stream has ended
	log  *slog.Logger

	mu      sync.Mutex
	seq     uint64
	running map[attemptKey]*beat
}

type attemptKey struct {
	taskID  string
	attempt uint32
}

// beat is one attempt that heartbeats.
type beat struct {
	key     attemptKey
	stop    func(cause error) // cancels the handler's ctx
	stopped *TaskStoppedError // set by a CANCEL or LOST answer
}

func newBeatStream(log *slog.Logger, send func(*pb.Heartbeat)) *beatStream {
	return &beatStream{send: send, log: log, running: map[attemptKey]*beat{}}
}

// begin registers a heartbeat-enabled attempt as its handler starts and sends
// its first heartbeat, so its lease counts from the start and not only from
// the handler's first call.
func (s *beatStream) begin(t *Task, stop context.CancelCauseFunc) {
	s.mu.Lock()
	b := s.track(t, stop)
	h := s.next(b, "")
	s.mu.Unlock()
	s.send(h)
}

// heartbeat is Task.Heartbeat on a Work stream.
func (s *beatStream) heartbeat(t *Task, details string) error {
	s.mu.Lock()
	b := t.beat
	if b != nil && b.stopped != nil {
		s.mu.Unlock()
		return b.stopped
	}
	if t.ended { // the outcome is out: the dispatcher would only answer LOST
		s.mu.Unlock()
		return nil
	}
	if b == nil {
		// A delivery without a heartbeat timeout whose handler heartbeats all
		// the same: its ctx has no cause to carry, so a stop cancels it plainly
		// (Heartbeat's error still says why).
		cancel := t.cancelRun
		b = s.track(t, func(error) { cancel() })
	}
	h := s.next(b, details)
	s.mu.Unlock()
	s.send(h)
	return nil
}

// track makes t's beat and lets answers find it; s.mu is held.
func (s *beatStream) track(t *Task, stop func(error)) *beat {
	b := &beat{key: attemptKey{t.TaskID, t.Attempt}, stop: stop}
	t.beat = b
	s.running[b.key] = b
	return b
}

// next is b's next heartbeat; s.mu is held.
func (s *beatStream) next(b *beat, details string) *pb.Heartbeat {
	s.seq++
	return &pb.Heartbeat{TaskId: b.key.taskID, Attempt: b.key.attempt, DetailsJson: details, Sequence: s.seq}
}

// end is called once, as the runner settles t's outcome: later answers for
// the attempt are ignored and later heartbeats not sent. It returns how an
// answer stopped the attempt, nil if none did.
func (s *beatStream) end(t *Task) *TaskStoppedError {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.ended = true
	b := t.beat
	if b == nil {
		return nil
	}
	if s.running[b.key] == b { // the same attempt delivered twice must not untrack the other
		delete(s.running, b.key)
	}
	return b.stopped
}

// endBeats ends t's heartbeats as its outcome is settled (see beatStream.end).
func (t *Task) endBeats() *TaskStoppedError {
	if t.stream == nil {
		return nil
	}
	return t.stream.end(t)
}

// answer applies one answer from the dispatcher.
func (s *beatStream) answer(a *pb.HeartbeatAnswer) {
	var stopped error
	switch a.GetVerdict() {
	case pb.HeartbeatVerdict_HEARTBEAT_VERDICT_CANCEL:
		stopped = ErrTaskCancelled
	case pb.HeartbeatVerdict_HEARTBEAT_VERDICT_LOST:
		stopped = ErrAttemptLost
	case pb.HeartbeatVerdict_HEARTBEAT_VERDICT_INVALID:
		// Only that heartbeat was refused (nothing recorded, the lease not
		// extended): the attempt goes on, but its author must hear of it.
		s.log.Warn("taskring: heartbeat refused", "task_id", a.GetTaskId(), "attempt", a.GetAttempt(),
			"sequence", a.GetSequence(), "reason", a.GetReason())
		return
	default: // CONTINUE: the lease was extended; nothing to do
		return
	}
	s.mu.Lock()
	b := s.running[attemptKey{a.GetTaskId(), a.GetAttempt()}]
	if b == nil || b.stopped != nil { // no longer running, or stopped already
		s.mu.Unlock()
		return
	}
	b.stopped = &TaskStoppedError{Err: stopped, Reason: a.GetReason()}
	cause := b.stopped
	s.mu.Unlock()
	s.log.Info("taskring: attempt stopped by its heartbeat's answer", "task_id", a.GetTaskId(),
		"attempt", a.GetAttempt(), "verdict", cause.outcomeText())
	b.stop(cause)
}
