"""A few worker threads that run submitted calls (the parsers' blocks, engine/learner.py), each
call's result or exception taken back from its :class:`Task`: what concurrent.futures'
ThreadPoolExecutor gives the learner, without its import (and logging's, which it imports):
~4 ms of every run's start-up, a tenth of olearn's imports."""
from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable


class Task:
    """A submitted call: its result, or the exception it raised, once a worker has run it."""

    __slots__ = ("_call", "_args", "_done", "_value", "_error", "_cancelled")

    def __init__(self, call: Callable, args: tuple):
        self._call, self._args = call, args
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self._cancelled = False

    def result(self) -> Any:
        """The call's result, once it has run; its exception is raised here."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> None:
        """Do not run the call if no worker has started it (its result is then None)."""
        self._cancelled = True

    def run(self) -> None:
        if not self._cancelled:
            try:
                self._value = self._call(*self._args)
            except BaseException as exc:  # handed to result(), in the caller's thread
                self._error = exc
        self._done.set()


class Pool:
    """``threads`` worker threads taking the submitted calls in order; :meth:`shutdown` lets
    them finish the calls submitted (those cancelled are skipped) and joins them."""

    def __init__(self, threads: int):
        self._tasks: deque[Task] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._workers = [threading.Thread(target=self._work, daemon=True)
                         for _ in range(threads)]
        for worker in self._workers:
            worker.start()

    def submit(self, call: Callable, *args) -> Task:
        task = Task(call, args)
        with self._ready:
            self._tasks.append(task)
            self._ready.notify()
        return task

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._tasks and not self._closing:
                    self._ready.wait()
                if not self._tasks:
                    return
                task = self._tasks.popleft()
            task.run()

    def shutdown(self) -> None:
        with self._ready:
            self._closing = True
            self._ready.notify_all()
        for worker in self._workers:
            worker.join()
