"""The refusals of the stores beside the task store (cron rules, dead letters, bulk replay
jobs). They say what was refused and carry no transport status: the API edges map them to
gRPC codes and HTTP statuses (dispatcher/api/service.py status_code), as every TaskringError is."""
from __future__ import annotations

from dispatcher.base.errors import TaskringError, quote


class RuleNotFound(TaskringError):
    def __init__(self, key: str):
        super().__init__(f"cron rule {quote(key)} not found")


class RuleExists(TaskringError):
    def __init__(self, key: str):
        super().__init__(f"cron rule {quote(key)} already exists (UpdateCronRule changes it)")


class NotDeadLettered(TaskringError):
    def __init__(self, task_id: str, state: str):
        self.state = state
        super().__init__(f"task {quote(task_id)} is not a dead letter (it is {state})")


class UniqueKeyHeld(TaskringError):
    """A replay that would run next to another live task with the same unique key."""

    def __init__(self, task_id: str, unique_key: str, holder: str, holder_state: str):
        self.holder = holder
        super().__init__(f"task {quote(task_id)} was not replayed: its unique key {quote(unique_key)} is held by"
                         f" task {quote(holder)} ({holder_state}) since it was dead-lettered; replaying it would"
                         " run two tasks with one key (wait for or cancel that task, then replay)")


class ChangedSinceRead(TaskringError):
    """The dead letter changed between the diff shown and the confirmation."""

    def __init__(self, task_id: str):
        super().__init__(f"dead letter {quote(task_id)} changed since it was read; read it again and confirm"
                         " the new diff")


class JobNotFound(TaskringError):
    def __init__(self, job_id: int):
        super().__init__(f"bulk replay {job_id} not found")


class JobStateConflict(TaskringError):
    def __init__(self, job_id: int, state: str, action: str):
        super().__init__(f"bulk replay {job_id} is {state}: it cannot {action}")


class PolicyNotFound(TaskringError):
    def __init__(self, key: str):
        super().__init__(f"no policy set through the API for {quote(key)} (the policies file's entry, if any,"
                         " is not deleted through the API)")


class PolicyRevisionMismatch(TaskringError):
    """A change made against a revision that is no longer the entry's (someone changed it since)."""

    def __init__(self, key: str, expected: int, actual: int):
        self.expected, self.actual = expected, actual
        super().__init__(f"policy {quote(key)} is at revision {actual}, not {expected}: read it again and make the"
                         " change on what it is now")


class GraphExists(TaskringError):
    """A SubmitGraph with a graph id that names another graph (other tasks) in its namespace."""

    def __init__(self, namespace: str, graph_id: str):
        super().__init__(f"graph_id: {quote(graph_id)} is already a graph of namespace {quote(namespace)} with other"
                         " tasks (a retried SubmitGraph must send the same tasks; choose another id for another"
                         " graph); nothing was written")


class GraphNotFound(TaskringError):
    def __init__(self, namespace: str, graph_id: str):
        super().__init__(f"graph {quote(namespace + '/' + graph_id)} not found")


class NotSkippable(TaskringError):
    """An operator's skip of a task of a graph that is neither dead-lettered nor waiting."""

    def __init__(self, task_id: str, state: str):
        super().__init__(f"task {quote(task_id)} is {state}: only a dead-lettered or waiting task of a graph can be"
                         " skipped (cancel a running one, replay a dead letter to run it again)")


class AdderNotRunning(TaskringError):
    """AddGraphTasks from a task that is not running the attempt it says (it ended, or that
    attempt was given up): what it adds would wait for an end already counted."""

    def __init__(self, task_id: str, attempt: int, state: str, running: int):
        super().__init__(f"adder_task_id: task {quote(task_id)} is {state} at attempt {running}, not running attempt"
                         f" {attempt}: only a running task adds to its graph; nothing was added")


class NotWaiting(TaskringError):
    """An also_before task of AddGraphTasks that no longer waits: it cannot wait for more."""

    def __init__(self, field: str, key: str, state: str):
        super().__init__(f"{field}: {quote(key)} is {state}, no longer waiting: it cannot also wait for the new"
                         " tasks (the tasks were added; retry without it, or with another)")


class GraphCancelled(TaskringError):
    def __init__(self, namespace: str, graph_id: str):
        super().__init__(f"graph {quote(namespace + '/' + graph_id)} was cancelled: nothing is added to it")
