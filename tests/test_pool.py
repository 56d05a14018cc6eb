"""The parsers' worker threads (olearn/engine/pool.py)."""
import threading

import pytest

from olearn.engine.pool import Pool


def test_each_task_gives_its_own_result_whatever_order_they_finish_in():
    pool = Pool(2)
    gates = [threading.Event() for _ in range(4)]
    tasks = [pool.submit(lambda i: gates[i].wait(5) and i * i, i) for i in range(4)]
    for gate in reversed(gates):
        gate.set()
    assert [task.result() for task in tasks] == [0, 1, 4, 9]
    pool.shutdown()


def test_the_workers_run_tasks_at_the_same_time():
    pool = Pool(2)
    both = threading.Barrier(2, timeout=5)  # broken (an error) unless two tasks run at once
    tasks = [pool.submit(both.wait) for _ in range(2)]
    assert sorted(task.result() for task in tasks) == [0, 1]
    pool.shutdown()


def test_an_exception_is_raised_by_result_in_the_callers_thread():
    pool = Pool(1)
    task = pool.submit(int, "not a number")
    with pytest.raises(ValueError, match="not a number"):
        task.result()
    assert pool.submit(int, "7").result() == 7  # the worker goes on
    pool.shutdown()


def test_shutdown_runs_what_was_submitted_but_not_what_was_cancelled():
    pool = Pool(1)
    gate = threading.Event()
    ran = []
    first = pool.submit(gate.wait, 5)
    pool.submit(ran.append, "kept")
    dropped = pool.submit(ran.append, "dropped")
    dropped.cancel()
    gate.set()
    pool.shutdown()
    assert first.result() is True and ran == ["kept"] and dropped.result() is None
    assert not any(thread.is_alive() for thread in pool._workers)
