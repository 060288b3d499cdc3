from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Priority(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIORITY_UNSPECIFIED: _ClassVar[Priority]
    PRIORITY_LOW: _ClassVar[Priority]
    PRIORITY_NORMAL: _ClassVar[Priority]
    PRIORITY_HIGH: _ClassVar[Priority]

class TaskState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATE_UNSPECIFIED: _ClassVar[TaskState]
    TASK_STATE_ACCEPTED: _ClassVar[TaskState]
    TASK_STATE_QUEUED: _ClassVar[TaskState]
    TASK_STATE_DISPATCHED: _ClassVar[TaskState]
    TASK_STATE_RUNNING: _ClassVar[TaskState]
    TASK_STATE_RETRY_WAIT: _ClassVar[TaskState]
    TASK_STATE_SUCCEEDED: _ClassVar[TaskState]
    TASK_STATE_FAILED: _ClassVar[TaskState]
    TASK_STATE_DEAD_LETTERED: _ClassVar[TaskState]
    TASK_STATE_CANCELLED: _ClassVar[TaskState]
    TASK_STATE_WAITING: _ClassVar[TaskState]
    TASK_STATE_SKIPPED: _ClassVar[TaskState]

class JoinRule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOIN_RULE_UNSPECIFIED: _ClassVar[JoinRule]
    JOIN_RULE_ALL_SUCCEEDED: _ClassVar[JoinRule]
    JOIN_RULE_ALL_DONE: _ClassVar[JoinRule]
    JOIN_RULE_NONE_FAILED: _ClassVar[JoinRule]
    JOIN_RULE_ANY_SUCCEEDED: _ClassVar[JoinRule]
    JOIN_RULE_AT_LEAST: _ClassVar[JoinRule]

class OnFailure(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ON_FAILURE_UNSPECIFIED: _ClassVar[OnFailure]
    ON_FAILURE_SKIP: _ClassVar[OnFailure]
    ON_FAILURE_IGNORE: _ClassVar[OnFailure]
    ON_FAILURE_CONTINUE: _ClassVar[OnFailure]

class CancelMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CANCEL_MODE_UNSPECIFIED: _ClassVar[CancelMode]
    CANCEL_MODE_GRACEFUL: _ClassVar[CancelMode]
    CANCEL_MODE_IMMEDIATE: _ClassVar[CancelMode]

class HeartbeatVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HEARTBEAT_VERDICT_UNSPECIFIED: _ClassVar[HeartbeatVerdict]
    HEARTBEAT_VERDICT_CONTINUE: _ClassVar[HeartbeatVerdict]
    HEARTBEAT_VERDICT_CANCEL: _ClassVar[HeartbeatVerdict]
    HEARTBEAT_VERDICT_LOST: _ClassVar[HeartbeatVerdict]
    HEARTBEAT_VERDICT_INVALID: _ClassVar[HeartbeatVerdict]

class OutcomeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_KIND_UNSPECIFIED: _ClassVar[OutcomeKind]
    OUTCOME_KIND_SUCCEEDED: _ClassVar[OutcomeKind]
    OUTCOME_KIND_RETRYABLE_FAILURE: _ClassVar[OutcomeKind]
    OUTCOME_KIND_NON_RETRYABLE_FAILURE: _ClassVar[OutcomeKind]
    OUTCOME_KIND_TIMED_OUT: _ClassVar[OutcomeKind]
    OUTCOME_KIND_NO_HANDLER: _ClassVar[OutcomeKind]
    OUTCOME_KIND_NOT_STARTED: _ClassVar[OutcomeKind]
    OUTCOME_KIND_STOPPED: _ClassVar[OutcomeKind]
PRIORITY_UNSPECIFIED: Priority
PRIORITY_LOW: Priority
PRIORITY_NORMAL: Priority
PRIORITY_HIGH: Priority
TASK_STATE_UNSPECIFIED: TaskState
TASK_STATE_ACCEPTED: TaskState
TASK_STATE_QUEUED: TaskState
TASK_STATE_DISPATCHED: TaskState
TASK_STATE_RUNNING: TaskState
TASK_STATE_RETRY_WAIT: TaskState
TASK_STATE_SUCCEEDED: TaskState
TASK_STATE_FAILED: TaskState
TASK_STATE_DEAD_LETTERED: TaskState
TASK_STATE_CANCELLED: TaskState
TASK_STATE_WAITING: TaskState
TASK_STATE_SKIPPED: TaskState
JOIN_RULE_UNSPECIFIED: JoinRule
JOIN_RULE_ALL_SUCCEEDED: JoinRule
JOIN_RULE_ALL_DONE: JoinRule
JOIN_RULE_NONE_FAILED: JoinRule
JOIN_RULE_ANY_SUCCEEDED: JoinRule
JOIN_RULE_AT_LEAST: JoinRule
ON_FAILURE_UNSPECIFIED: OnFailure
ON_FAILURE_SKIP: OnFailure
ON_FAILURE_IGNORE: OnFailure
ON_FAILURE_CONTINUE: OnFailure
CANCEL_MODE_UNSPECIFIED: CancelMode
CANCEL_MODE_GRACEFUL: CancelMode
CANCEL_MODE_IMMEDIATE: CancelMode
HEARTBEAT_VERDICT_UNSPECIFIED: HeartbeatVerdict
HEARTBEAT_VERDICT_CONTINUE: HeartbeatVerdict
HEARTBEAT_VERDICT_CANCEL: HeartbeatVerdict
HEARTBEAT_VERDICT_LOST: HeartbeatVerdict
HEARTBEAT_VERDICT_INVALID: HeartbeatVerdict
OUTCOME_KIND_UNSPECIFIED: OutcomeKind
OUTCOME_KIND_SUCCEEDED: OutcomeKind
OUTCOME_KIND_RETRYABLE_FAILURE: OutcomeKind
OUTCOME_KIND_NON_RETRYABLE_FAILURE: OutcomeKind
OUTCOME_KIND_TIMED_OUT: OutcomeKind
OUTCOME_KIND_NO_HANDLER: OutcomeKind
OUTCOME_KIND_NOT_STARTED: OutcomeKind
OUTCOME_KIND_STOPPED: OutcomeKind

class RetryPolicy(_message.Message):
    __slots__ = ("initial_backoff_ms", "max_backoff_ms", "multiplier", "schedule_ms")
    INITIAL_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_MS_FIELD_NUMBER: _ClassVar[int]
    initial_backoff_ms: int
    max_backoff_ms: int
    multiplier: float
    schedule_ms: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, initial_backoff_ms: _Optional[int] = ..., max_backoff_ms: _Optional[int] = ..., multiplier: _Optional[float] = ..., schedule_ms: _Optional[_Iterable[int]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("task_id", "namespace", "task_type", "payload_json", "payload_version", "schedule_time", "delay_ms", "timeout_ms", "max_retries", "retry_policy", "retry_count", "priority", "unique_key", "unique_ttl_ms", "trace_id", "created_at", "cron_rule", "cron_fire_time", "graph")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_VERSION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_KEY_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CRON_RULE_FIELD_NUMBER: _ClassVar[int]
    CRON_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    namespace: str
    task_type: str
    payload_json: str
    payload_version: int
    schedule_time: str
    delay_ms: int
    timeout_ms: int
    max_retries: int
    retry_policy: RetryPolicy
    retry_count: int
    priority: Priority
    unique_key: str
    unique_ttl_ms: int
    trace_id: str
    created_at: str
    cron_rule: str
    cron_fire_time: str
    graph: GraphRef
    def __init__(self, task_id: _Optional[str] = ..., namespace: _Optional[str] = ..., task_type: _Optional[str] = ..., payload_json: _Optional[str] = ..., payload_version: _Optional[int] = ..., schedule_time: _Optional[str] = ..., delay_ms: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., max_retries: _Optional[int] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., retry_count: _Optional[int] = ..., priority: _Optional[_Union[Priority, str]] = ..., unique_key: _Optional[str] = ..., unique_ttl_ms: _Optional[int] = ..., trace_id: _Optional[str] = ..., created_at: _Optional[str] = ..., cron_rule: _Optional[str] = ..., cron_fire_time: _Optional[str] = ..., graph: _Optional[_Union[GraphRef, _Mapping]] = ...) -> None: ...

class GraphRef(_message.Message):
    __slots__ = ("graph_id", "key", "has_dependents", "parents", "continue_dependents")
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    HAS_DEPENDENTS_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_DEPENDENTS_FIELD_NUMBER: _ClassVar[int]
    graph_id: str
    key: str
    has_dependents: bool
    parents: int
    continue_dependents: bool
    def __init__(self, graph_id: _Optional[str] = ..., key: _Optional[str] = ..., has_dependents: _Optional[bool] = ..., parents: _Optional[int] = ..., continue_dependents: _Optional[bool] = ...) -> None: ...

class SubmitRequest(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class SubmitResponse(_message.Message):
    __slots__ = ("task_id", "duplicate", "state", "due_at", "slot")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DUE_AT_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    duplicate: bool
    state: TaskState
    due_at: str
    slot: int
    def __init__(self, task_id: _Optional[str] = ..., duplicate: _Optional[bool] = ..., state: _Optional[_Union[TaskState, str]] = ..., due_at: _Optional[str] = ..., slot: _Optional[int] = ...) -> None: ...

class SubmitBatchRequest(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class SubmitBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[SubmitResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[SubmitResponse, _Mapping]]] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ("task_id", "state")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    state: TaskState
    def __init__(self, task_id: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ("task_id",)
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class TaskEvent(_message.Message):
    __slots__ = ("state", "at", "node", "attempt", "detail")
    STATE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    state: TaskState
    at: str
    node: str
    attempt: int
    detail: str
    def __init__(self, state: _Optional[_Union[TaskState, str]] = ..., at: _Optional[str] = ..., node: _Optional[str] = ..., attempt: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ("task", "state", "attempts", "due_at", "slot", "last_error", "last_stack_trace", "history", "waiting")
    TASK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DUE_AT_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    task: Task
    state: TaskState
    attempts: int
    due_at: str
    slot: int
    last_error: str
    last_stack_trace: str
    history: _containers.RepeatedCompositeFieldContainer[TaskEvent]
    waiting: str
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., state: _Optional[_Union[TaskState, str]] = ..., attempts: _Optional[int] = ..., due_at: _Optional[str] = ..., slot: _Optional[int] = ..., last_error: _Optional[str] = ..., last_stack_trace: _Optional[str] = ..., history: _Optional[_Iterable[_Union[TaskEvent, _Mapping]]] = ..., waiting: _Optional[str] = ...) -> None: ...

class CronRule(_message.Message):
    __slots__ = ("namespace", "name", "task_type", "payload_json", "schedule", "time_zone", "on_repeated_hour", "on_skipped_hour", "catch_up", "catch_up_limit", "overlap", "owner_team", "description", "timeout_ms", "max_retries", "paused", "last_fire_time", "last_fire_task_id", "last_fire_state", "next_fire_time", "created_at", "updated_at")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    ON_REPEATED_HOUR_FIELD_NUMBER: _ClassVar[int]
    ON_SKIPPED_HOUR_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_LIMIT_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    OWNER_TEAM_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRE_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRE_STATE_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    task_type: str
    payload_json: str
    schedule: str
    time_zone: str
    on_repeated_hour: str
    on_skipped_hour: str
    catch_up: str
    catch_up_limit: int
    overlap: str
    owner_team: str
    description: str
    timeout_ms: int
    max_retries: int
    paused: bool
    last_fire_time: str
    last_fire_task_id: str
    last_fire_state: TaskState
    next_fire_time: str
    created_at: str
    updated_at: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., task_type: _Optional[str] = ..., payload_json: _Optional[str] = ..., schedule: _Optional[str] = ..., time_zone: _Optional[str] = ..., on_repeated_hour: _Optional[str] = ..., on_skipped_hour: _Optional[str] = ..., catch_up: _Optional[str] = ..., catch_up_limit: _Optional[int] = ..., overlap: _Optional[str] = ..., owner_team: _Optional[str] = ..., description: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., max_retries: _Optional[int] = ..., paused: _Optional[bool] = ..., last_fire_time: _Optional[str] = ..., last_fire_task_id: _Optional[str] = ..., last_fire_state: _Optional[_Union[TaskState, str]] = ..., next_fire_time: _Optional[str] = ..., created_at: _Optional[str] = ..., updated_at: _Optional[str] = ...) -> None: ...

class CronRuleRef(_message.Message):
    __slots__ = ("namespace", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class PutCronRuleRequest(_message.Message):
    __slots__ = ("rule",)
    RULE_FIELD_NUMBER: _ClassVar[int]
    rule: CronRule
    def __init__(self, rule: _Optional[_Union[CronRule, _Mapping]] = ...) -> None: ...

class PutCronRuleResponse(_message.Message):
    __slots__ = ("rule",)
    RULE_FIELD_NUMBER: _ClassVar[int]
    rule: CronRule
    def __init__(self, rule: _Optional[_Union[CronRule, _Mapping]] = ...) -> None: ...

class ListCronRulesRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class ListCronRulesResponse(_message.Message):
    __slots__ = ("rules",)
    RULES_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[CronRule]
    def __init__(self, rules: _Optional[_Iterable[_Union[CronRule, _Mapping]]] = ...) -> None: ...

class TypePolicy(_message.Message):
    __slots__ = ("namespace", "task_type", "policy_json", "source", "revision", "updated_by", "updated_at", "file_policy_json")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    POLICY_JSON_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    FILE_POLICY_JSON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_type: str
    policy_json: str
    source: str
    revision: int
    updated_by: str
    updated_at: str
    file_policy_json: str
    def __init__(self, namespace: _Optional[str] = ..., task_type: _Optional[str] = ..., policy_json: _Optional[str] = ..., source: _Optional[str] = ..., revision: _Optional[int] = ..., updated_by: _Optional[str] = ..., updated_at: _Optional[str] = ..., file_policy_json: _Optional[str] = ...) -> None: ...

class TypePolicyRef(_message.Message):
    __slots__ = ("namespace", "task_type")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_type: str
    def __init__(self, namespace: _Optional[str] = ..., task_type: _Optional[str] = ...) -> None: ...

class PutTypePolicyRequest(_message.Message):
    __slots__ = ("namespace", "task_type", "policy_json", "reason", "if_revision")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    POLICY_JSON_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IF_REVISION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_type: str
    policy_json: str
    reason: str
    if_revision: int
    def __init__(self, namespace: _Optional[str] = ..., task_type: _Optional[str] = ..., policy_json: _Optional[str] = ..., reason: _Optional[str] = ..., if_revision: _Optional[int] = ...) -> None: ...

class DeleteTypePolicyRequest(_message.Message):
    __slots__ = ("namespace", "task_type", "reason", "if_revision")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IF_REVISION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_type: str
    reason: str
    if_revision: int
    def __init__(self, namespace: _Optional[str] = ..., task_type: _Optional[str] = ..., reason: _Optional[str] = ..., if_revision: _Optional[int] = ...) -> None: ...

class ListTypePoliciesRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class ListTypePoliciesResponse(_message.Message):
    __slots__ = ("policies",)
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[TypePolicy]
    def __init__(self, policies: _Optional[_Iterable[_Union[TypePolicy, _Mapping]]] = ...) -> None: ...

class Dependency(_message.Message):
    __slots__ = ("key", "on_failure")
    KEY_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    key: str
    on_failure: OnFailure
    def __init__(self, key: _Optional[str] = ..., on_failure: _Optional[_Union[OnFailure, str]] = ...) -> None: ...

class Join(_message.Message):
    __slots__ = ("rule", "at_least")
    RULE_FIELD_NUMBER: _ClassVar[int]
    AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    rule: JoinRule
    at_least: int
    def __init__(self, rule: _Optional[_Union[JoinRule, str]] = ..., at_least: _Optional[int] = ...) -> None: ...

class GraphTask(_message.Message):
    __slots__ = ("key", "task", "depends_on", "join")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    JOIN_FIELD_NUMBER: _ClassVar[int]
    key: str
    task: Task
    depends_on: _containers.RepeatedCompositeFieldContainer[Dependency]
    join: Join
    def __init__(self, key: _Optional[str] = ..., task: _Optional[_Union[Task, _Mapping]] = ..., depends_on: _Optional[_Iterable[_Union[Dependency, _Mapping]]] = ..., join: _Optional[_Union[Join, _Mapping]] = ...) -> None: ...

class SubmitGraphRequest(_message.Message):
    __slots__ = ("namespace", "graph_id", "tasks")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    graph_id: str
    tasks: _containers.RepeatedCompositeFieldContainer[GraphTask]
    def __init__(self, namespace: _Optional[str] = ..., graph_id: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[GraphTask, _Mapping]]] = ...) -> None: ...

class GraphTaskRef(_message.Message):
    __slots__ = ("key", "task_id", "state", "slot")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    key: str
    task_id: str
    state: TaskState
    slot: int
    def __init__(self, key: _Optional[str] = ..., task_id: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., slot: _Optional[int] = ...) -> None: ...

class SubmitGraphResponse(_message.Message):
    __slots__ = ("graph_id", "duplicate", "tasks")
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    graph_id: str
    duplicate: bool
    tasks: _containers.RepeatedCompositeFieldContainer[GraphTaskRef]
    def __init__(self, graph_id: _Optional[str] = ..., duplicate: _Optional[bool] = ..., tasks: _Optional[_Iterable[_Union[GraphTaskRef, _Mapping]]] = ...) -> None: ...

class AddGraphTasksRequest(_message.Message):
    __slots__ = ("namespace", "graph_id", "adder_task_id", "adder_attempt", "tasks", "also_before")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    ADDER_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ADDER_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    ALSO_BEFORE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    graph_id: str
    adder_task_id: str
    adder_attempt: int
    tasks: _containers.RepeatedCompositeFieldContainer[GraphTask]
    also_before: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., graph_id: _Optional[str] = ..., adder_task_id: _Optional[str] = ..., adder_attempt: _Optional[int] = ..., tasks: _Optional[_Iterable[_Union[GraphTask, _Mapping]]] = ..., also_before: _Optional[_Iterable[str]] = ...) -> None: ...

class AddGraphTasksResponse(_message.Message):
    __slots__ = ("duplicate", "tasks")
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    tasks: _containers.RepeatedCompositeFieldContainer[GraphTaskRef]
    def __init__(self, duplicate: _Optional[bool] = ..., tasks: _Optional[_Iterable[_Union[GraphTaskRef, _Mapping]]] = ...) -> None: ...

class GetGraphRequest(_message.Message):
    __slots__ = ("namespace", "graph_id", "with_results")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    WITH_RESULTS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    graph_id: str
    with_results: bool
    def __init__(self, namespace: _Optional[str] = ..., graph_id: _Optional[str] = ..., with_results: _Optional[bool] = ...) -> None: ...

class GraphEdge(_message.Message):
    __slots__ = ("parent_key", "on_failure", "outcome")
    PARENT_KEY_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    parent_key: str
    on_failure: OnFailure
    outcome: str
    def __init__(self, parent_key: _Optional[str] = ..., on_failure: _Optional[_Union[OnFailure, str]] = ..., outcome: _Optional[str] = ...) -> None: ...

class GraphNode(_message.Message):
    __slots__ = ("key", "task_id", "state", "attempts", "join", "depends_on", "reason", "result_json", "waiting")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    JOIN_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    key: str
    task_id: str
    state: TaskState
    attempts: int
    join: Join
    depends_on: _containers.RepeatedCompositeFieldContainer[GraphEdge]
    reason: str
    result_json: str
    waiting: str
    def __init__(self, key: _Optional[str] = ..., task_id: _Optional[str] = ..., state: _Optional[_Union[TaskState, str]] = ..., attempts: _Optional[int] = ..., join: _Optional[_Union[Join, _Mapping]] = ..., depends_on: _Optional[_Iterable[_Union[GraphEdge, _Mapping]]] = ..., reason: _Optional[str] = ..., result_json: _Optional[str] = ..., waiting: _Optional[str] = ...) -> None: ...

class GetGraphResponse(_message.Message):
    __slots__ = ("graph_id", "namespace", "state", "counts", "nodes")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    graph_id: str
    namespace: str
    state: str
    counts: _containers.ScalarMap[str, int]
    nodes: _containers.RepeatedCompositeFieldContainer[GraphNode]
    def __init__(self, graph_id: _Optional[str] = ..., namespace: _Optional[str] = ..., state: _Optional[str] = ..., counts: _Optional[_Mapping[str, int]] = ..., nodes: _Optional[_Iterable[_Union[GraphNode, _Mapping]]] = ...) -> None: ...

class CancelGraphRequest(_message.Message):
    __slots__ = ("namespace", "graph_id", "mode", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    graph_id: str
    mode: CancelMode
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., graph_id: _Optional[str] = ..., mode: _Optional[_Union[CancelMode, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelGraphResponse(_message.Message):
    __slots__ = ("cancelled", "running")
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    running: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cancelled: _Optional[int] = ..., running: _Optional[_Iterable[str]] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("task", "attempt", "epoch", "timeout_ms", "start_within_ms", "start_by_unix_ms", "heartbeat_timeout_ms", "heartbeat_details_json", "keep_result", "parent_results", "parent_results_truncated")
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    START_WITHIN_MS_FIELD_NUMBER: _ClassVar[int]
    START_BY_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    KEEP_RESULT_FIELD_NUMBER: _ClassVar[int]
    PARENT_RESULTS_FIELD_NUMBER: _ClassVar[int]
    PARENT_RESULTS_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    task: Task
    attempt: int
    epoch: int
    timeout_ms: int
    start_within_ms: int
    start_by_unix_ms: int
    heartbeat_timeout_ms: int
    heartbeat_details_json: str
    keep_result: bool
    parent_results: _containers.RepeatedCompositeFieldContainer[ParentResult]
    parent_results_truncated: bool
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., attempt: _Optional[int] = ..., epoch: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., start_within_ms: _Optional[int] = ..., start_by_unix_ms: _Optional[int] = ..., heartbeat_timeout_ms: _Optional[int] = ..., heartbeat_details_json: _Optional[str] = ..., keep_result: _Optional[bool] = ..., parent_results: _Optional[_Iterable[_Union[ParentResult, _Mapping]]] = ..., parent_results_truncated: _Optional[bool] = ...) -> None: ...

class ParentResult(_message.Message):
    __slots__ = ("key", "task_id", "outcome", "result_json", "error")
    KEY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    key: str
    task_id: str
    outcome: str
    result_json: str
    error: str
    def __init__(self, key: _Optional[str] = ..., task_id: _Optional[str] = ..., outcome: _Optional[str] = ..., result_json: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("deliveries", "dispatcher_node", "heartbeat_answers")
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    DISPATCHER_NODE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_ANSWERS_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[Delivery]
    dispatcher_node: str
    heartbeat_answers: _containers.RepeatedCompositeFieldContainer[HeartbeatAnswer]
    def __init__(self, deliveries: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ..., dispatcher_node: _Optional[str] = ..., heartbeat_answers: _Optional[_Iterable[_Union[HeartbeatAnswer, _Mapping]]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("task_id", "attempt", "details_json", "sequence")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    details_json: str
    sequence: int
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., details_json: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class HeartbeatAnswer(_message.Message):
    __slots__ = ("sequence", "task_id", "attempt", "verdict", "reason")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    task_id: str
    attempt: int
    verdict: HeartbeatVerdict
    reason: str
    def __init__(self, sequence: _Optional[int] = ..., task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., verdict: _Optional[_Union[HeartbeatVerdict, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class Outcome(_message.Message):
    __slots__ = ("task_id", "attempt", "kind", "error", "stack_trace", "started_at_ms", "finished_at_ms", "result_json", "added_graph_tasks")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ADDED_GRAPH_TASKS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    kind: OutcomeKind
    error: str
    stack_trace: str
    started_at_ms: int
    finished_at_ms: int
    result_json: str
    added_graph_tasks: bool
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., kind: _Optional[_Union[OutcomeKind, str]] = ..., error: _Optional[str] = ..., stack_trace: _Optional[str] = ..., started_at_ms: _Optional[int] = ..., finished_at_ms: _Optional[int] = ..., result_json: _Optional[str] = ..., added_graph_tasks: _Optional[bool] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("outcomes", "heartbeats")
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    HEARTBEATS_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[Outcome]
    heartbeats: _containers.RepeatedCompositeFieldContainer[Heartbeat]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[Outcome, _Mapping]]] = ..., heartbeats: _Optional[_Iterable[_Union[Heartbeat, _Mapping]]] = ...) -> None: ...

class QueuedTask(_message.Message):
    __slots__ = ("task", "attempt", "due_at_ms")
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DUE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    task: Task
    attempt: int
    due_at_ms: int
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., attempt: _Optional[int] = ..., due_at_ms: _Optional[int] = ...) -> None: ...
