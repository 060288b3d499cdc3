package taskring

import (
	"fmt"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
)

// TaskState is where a task is in its lifecycle; the values are the Python
// SDK's strings ("accepted", ..., "cancelled") so logs read the same.
type TaskState string

const (
	StateAccepted     TaskState = "accepted"
	StateQueued       TaskState = "queued"
	StateDispatched   TaskState = "dispatched"
	StateRunning      TaskState = "running"
	StateRetryWait    TaskState = "retry_wait"
	StateSucceeded    TaskState = "succeeded"
	StateFailed       TaskState = "failed"
	StateDeadLettered TaskState = "dead_lettered"
	StateCancelled    TaskState = "cancelled"
	// StateWaiting: a task of a graph waiting for the tasks it depends on.
	StateWaiting TaskState = "waiting"
	// StateSkipped: a task of a graph that will not run: its join rule can no longer be met.
	StateSkipped TaskState = "skipped"
)

// IsTerminal reports whether the task will not run again (short of a manual replay).
func (s TaskState) IsTerminal() bool {
	return s == StateSucceeded || s == StateDeadLettered || s == StateCancelled || s == StateSkipped
}

var statesFromPB = map[pb.TaskState]TaskState{
	pb.TaskState_TASK_STATE_ACCEPTED:      StateAccepted,
	pb.TaskState_TASK_STATE_QUEUED:        StateQueued,
	pb.TaskState_TASK_STATE_DISPATCHED:    StateDispatched,
	pb.TaskState_TASK_STATE_RUNNING:       StateRunning,
	pb.TaskState_TASK_STATE_RETRY_WAIT:    StateRetryWait,
	pb.TaskState_TASK_STATE_SUCCEEDED:     StateSucceeded,
	pb.TaskState_TASK_STATE_FAILED:        StateFailed,
	pb.TaskState_TASK_STATE_DEAD_LETTERED: StateDeadLettered,
	pb.TaskState_TASK_STATE_CANCELLED:     StateCancelled,
	pb.TaskState_TASK_STATE_WAITING:       StateWaiting,
	pb.TaskState_TASK_STATE_SKIPPED:       StateSkipped,
}

// stateFromPB fails on a value it does not know: that means the server is newer than this SDK.
func stateFromPB(v pb.TaskState) (TaskState, error) {
	if s, ok := statesFromPB[v]; ok {
		return s, nil
	}
	return "", &ProtocolError{Msg: fmt.Sprintf("server sent unknown task state %d; upgrade the taskring SDK", int32(v))}
}

// Priority is a priority class; each has its own Kafka topic, so LOW never queues ahead of HIGH.
type Priority string

const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal" // also what "" means
	PriorityHigh   Priority = "high"
)

var prioritiesToPB = map[Priority]pb.Priority{
	"":             pb.Priority_PRIORITY_NORMAL,
	PriorityLow:    pb.Priority_PRIORITY_LOW,
	PriorityNormal: pb.Priority_PRIORITY_NORMAL,
	PriorityHigh:   pb.Priority_PRIORITY_HIGH,
}

func priorityFromPB(v pb.Priority) Priority {
	switch v {
	case pb.Priority_PRIORITY_LOW:
		return PriorityLow
	case pb.Priority_PRIORITY_HIGH:
		return PriorityHigh
	}
	return PriorityNormal // UNSPECIFIED is NORMAL, says the proto
}
