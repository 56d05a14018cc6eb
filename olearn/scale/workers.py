"""The Dask cluster as --dask uses it: connecting, where a partition runs, and errors raised on
workers."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Iterator

from olearn.errors import OlearnError, OptionError


@contextlib.contextmanager
def connect(address: str) -> Iterator:
    """A Dask client: ``local`` or ``local:N`` starts a cluster of N worker processes (one
    thread each; N defaults to the number of cores), anything else is a scheduler's address.
    The client calls actors on the workers directly, not through the scheduler (sync.py)."""
    try:
        import dask
        from distributed import Client, KilledWorker, LocalCluster
    except ImportError:
        raise OlearnError("--dask needs Dask: pip install 'olearn[dask]'") from None
    timeout = dask.config.get("distributed.comm.timeouts.connect")
    with contextlib.ExitStack() as stack:
        if address == "local" or address.startswith("local:"):
            count = address.partition(":")[2] or str(os.cpu_count() or 1)
            if not count.isdigit() or int(count) < 1:
                raise OptionError(
                    f"--dask local:N needs a number of workers N >= 1, got {count!r}")
            cluster = stack.enter_context(LocalCluster(
                n_workers=int(count), threads_per_worker=1, processes=True,
                dashboard_address=":0", silence_logs=logging.ERROR))
            client = stack.enter_context(Client(cluster, direct_to_workers=True))
        else:
            try:
                client = stack.enter_context(Client(address, direct_to_workers=True))
            except (OSError, TimeoutError, ValueError) as exc:
                raise OlearnError(
                    f"cannot reach the Dask scheduler at {address} "
                    f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        try:
            client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            raise OlearnError(f"the Dask scheduler at {address} has no workers") from None
        try:
            yield client
        except KilledWorker as exc:
            raise OlearnError(f"Dask workers kept dying while running {exc.task} (see their "
                              "logs)") from None
        except (OSError, asyncio.CancelledError) as exc:
            raise OlearnError(f"lost the Dask scheduler at {address} ({type(exc).__name__}: "
                              f"{exc})") from None


def placement(workers: list[str], k: int) -> dict:
    """Where partition ``k`` runs: on worker k mod W, loosely (Dask moves it if that worker is
    gone); anywhere when no worker is known (one restarting)."""
    if not workers:
        return {}
    return {"workers": [workers[k % len(workers)]], "allow_other_workers": True}


def portable(exc: BaseException) -> BaseException:
    """``exc`` as a worker raises it to the client: an OlearnError rebuilt from its text alone,
    so that it pickles whole."""
    return OlearnError(str(exc)) if isinstance(exc, OlearnError) else exc
