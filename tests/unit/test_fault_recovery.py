"""How the fault matrix reads "lateness back to normal" (tests/integration/fault_matrix.py):
the end of the last second after the fault whose first attempts' p99 is late, so a busy
second counts and one straggler among a hundred on time does not."""
from __future__ import annotations

from tests.integration.fault_matrix import normal_lateness_ms, recovery_after

END = 1_000_000


def second(n: int, lates: list[float]) -> list[tuple[int, float]]:
    """First attempts due in second `n` after the fault, with these lateness figures (ms)."""
    return [(END + n * 1000 + i, late) for i, late in enumerate(lates)]


def test_no_late_second_is_no_recovery_time():
    assert recovery_after([], END, 250) == 0.0
    assert recovery_after(second(0, [10.0] * 100) + second(5, [249.0] * 100), END, 250) == 0.0


def test_the_last_second_with_a_late_p99_ends_the_recovery():
    on_time = [20.0] * 100
    lates = second(0, [900.0] * 100) + second(1, on_time) + second(3, [20.0] * 90 + [400.0] * 10) + second(4, on_time)
    assert recovery_after(lates, END, 250) == 4.0   # second 3 (10% late) is the last that is not normal


def test_one_straggler_in_a_busy_second_is_not_recovering_but_a_late_lone_task_is():
    assert recovery_after(second(6, [30.0] * 199 + [416.0]), END, 250) == 0.0
    assert recovery_after(second(6, [416.0]), END, 250) == 7.0


def test_normal_is_the_threshold_or_twice_what_the_run_saw_before_the_fault():
    assert normal_lateness_ms([], 250) == 250.0
    assert normal_lateness_ms([40.0] * 100, 250) == 250.0          # a quiet box: the threshold
    assert normal_lateness_ms([40.0] * 98 + [225.0] * 2, 250) == 450.0   # a busy one: its own p99, twice
    busy_before = [225.0] * 100
    after = second(16, [30.0] * 290 + [420.0] * 10)
    assert recovery_after(after, END, normal_lateness_ms(busy_before, 250)) == 0.0
    assert recovery_after(after, END, 250) == 17.0


def test_after_three_normal_seconds_one_late_second_is_a_hiccup_but_two_are_a_relapse():
    normal = [s for n in range(6) for s in second(n, [20.0] * 100)]
    hiccup = second(7, [600.0] * 100) + second(8, [20.0] * 100)
    assert recovery_after(normal + hiccup, END, 250) == 0.0
    relapse = second(7, [600.0] * 100) + second(8, [600.0] * 100) + second(9, [20.0] * 100)
    assert recovery_after(normal + relapse, END, 250) == 9.0
    # Before three normal seconds in a row, a lone late second is still the recovery.
    early = second(0, [20.0] * 100) + second(1, [20.0] * 100) + second(2, [600.0] * 100) + second(3, [20.0] * 100)
    assert recovery_after(early, END, 250) == 3.0
