"""Many independent simulations at once — serially, in local processes, or on a Dask cluster — for everything that
runs more than one: calibration's fit, validate, reproduce, sweep, plan and the app. Each scenario is seeded, so
where a result was computed does not change it."""
from __future__ import annotations

import copy
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterator, Sequence

from kafkasim.model.errors import ScenarioError


class Batch:
    """`with Batch(jobs, scheduler) as batch:` then `batch.map(fn, items)` (results in the items' order, each as
    soon as it and those before it are done) or `batch.completed(fn, items)` ((index, result) as each finishes).
    The worker processes (forked: they inherit the imported model) or the Dask client live as long as the batch."""

    def __init__(self, jobs: int = 1, scheduler: str | None = None):
        self.jobs, self.scheduler = max(1, jobs), scheduler
        self._pool: ProcessPoolExecutor | None = None
        self._client = None

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
        if self._client is not None:
            self._client.close()

    def map(self, fn: Callable[[Any], Any], items: Sequence) -> Iterator[Any]:
        done: dict[int, Any] = {}
        due = 0
        for i, result in self.completed(fn, items):
            done[i] = result
            while due in done:
                yield done.pop(due)
                due += 1

    def completed(self, fn: Callable[[Any], Any], items: Sequence) -> Iterator[tuple[int, Any]]:
        items = list(items)
        if self.scheduler:
            yield from self._on_dask(fn, items)
        elif self.jobs == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield i, fn(item)
        else:
            yield from self._in_processes(fn, items)

    def _in_processes(self, fn, items: list) -> Iterator[tuple[int, Any]]:
        if self._pool is None:
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self._pool = ProcessPoolExecutor(min(self.jobs, len(items)), mp_context=multiprocessing.get_context(method))
        futures = {self._pool.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:           # (Ctrl-C, or the caller stopped reading): drop what has not started
            for future in futures:
                future.cancel()
            raise

    def _on_dask(self, fn, items: list) -> Iterator[tuple[int, Any]]:
        try:
            from dask.distributed import Client, as_completed as dask_completed
        except ImportError:
            raise ScenarioError("--scheduler needs Dask: pip install 'kafkasim[dask]' (dask and distributed)") from None
        if self._client is None:
            try:
                self._client = Client(self.scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise ScenarioError(f"--scheduler {self.scheduler}: cannot reach the Dask scheduler ({exc})") from None
        # pure=True: the same item is the same task (a Scenario is hashable), so repeated points run once.
        futures = self._client.map(fn, items, pure=True)
        positions: dict[str, list[int]] = {}
        for i, future in enumerate(futures):
            positions.setdefault(future.key, []).append(i)
        for future in dask_completed(futures):
            if future.key in positions:
                result = future.result()
                for n, i in enumerate(positions.pop(future.key)):
                    yield i, result if n == 0 else copy.copy(result)
