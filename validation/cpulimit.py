"""A client's CPU limit (hardware.client_cpu_limit) applied as a container's is: a CFS quota on a cgroup of its
own, cgroup v2 (cpu.max) or v1's cpu controller (cpu.cfs_quota_us), removed when the run is done. Its throttling
(cpu.stat) is kept with the run: how many periods the client used up its quota in, and how long it waited."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from kafkasim.model.errors import UserError

ROOT = Path("/sys/fs/cgroup")


class CpuLimit:
    """`cores` CPUs every `period_ms` for the processes started with `enter` as their preexec_fn."""

    def __init__(self, cores: float, period_ms: float = 100.0, root: Path = ROOT, name: str | None = None):
        self.cores, self.period_us = cores, int(round(period_ms * 1000))
        quota = max(1000, int(round(cores * self.period_us)))      # (the kernel's least quota is 1 ms)
        name = name or f"kafkasim-client-{os.getpid()}"
        self.v2, self.path = (root / "cgroup.controllers").exists(), None
        try:
            if self.v2:
                if "cpu" not in (root / "cgroup.controllers").read_text().split():
                    raise OSError(f"{root} offers no cpu controller")
                if "cpu" not in (root / "cgroup.subtree_control").read_text().split():
                    (root / "cgroup.subtree_control").write_text("+cpu")
                self.path = root / name
                self.path.mkdir(exist_ok=True)
                (self.path / "cpu.max").write_text(f"{quota} {self.period_us}")
            else:
                self.path = root / "cpu" / name
                self.path.mkdir(exist_ok=True)
                (self.path / "cpu.cfs_period_us").write_text(str(self.period_us))
                (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError as exc:
            if self.path is not None:
                self.close()        # (made, but not writable: leave nothing behind)
            raise UserError(f"hardware.client_cpu_limit={cores:g} needs a cgroup cpu controller kafkasim can write "
                            f"(cgroup v2 at {root}, or v1's at {root / 'cpu'}; as root): {exc}") from None
        self.at_start = self._stat()

    def enter(self) -> None:
        """In the child, before it runs the client: join the cgroup."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def _stat(self) -> dict[str, int]:
        lines = (self.path / "cpu.stat").read_text().split("\n")
        return {k: int(v) for k, v in (line.split() for line in lines if line.strip())}

    def stats(self) -> dict:
        """The limit and its throttling since the cgroup was made: periods, those the quota ran out in, seconds
        the processes waited for the next period."""
        now, was = self._stat(), self.at_start
        waited = ((now.get("throttled_usec", 0) - was.get("throttled_usec", 0)) / 1e6 if self.v2
                  else (now.get("throttled_time", 0) - was.get("throttled_time", 0)) / 1e9)
        return {"cores": self.cores, "period_ms": self.period_us / 1000, "cgroup": "v2" if self.v2 else "v1",
                "periods": now["nr_periods"] - was["nr_periods"],
                "throttled_periods": now["nr_throttled"] - was["nr_throttled"], "throttled_s": round(waited, 3)}

    def close(self) -> None:
        """Remove the cgroup once its processes are gone (they are killed or exited by now: wait a moment)."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)

    def __enter__(self) -> CpuLimit:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def of(sc):
    """A scenario's client CPU limit as a context (None where it has none)."""
    limit = sc.hardware["client_cpu_limit"]
    return CpuLimit(limit, sc.hardware["cpu_period_ms"]) if limit else contextlib.nullcontext()
