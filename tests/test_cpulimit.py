"""hardware.client_cpu_limit in live runs: the client runs in a cgroup of its own with that CFS quota (v2's cpu.max or
v1's cpu.cfs_quota_us), its throttling kept with the run, the cgroup gone after."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasim.model.errors import UserError
from kafkasim.validation.cpulimit import ROOT, CpuLimit


def _layout(root: Path, v2: bool, name: str) -> Path:
    """A cgroup file system's files as the kernel shows them, in a plain directory."""
    group = root / name if v2 else root / "cpu" / name
    group.mkdir(parents=True)
    if v2:
        (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (root / "cgroup.subtree_control").write_text("memory pids\n")
        (group / "cpu.stat").write_text("usage_usec 10\nnr_periods 4\nnr_throttled 1\nthrottled_usec 2000\n")
    else:
        (group / "cpu.stat").write_text("nr_periods 4\nnr_throttled 1\nthrottled_time 2000000\n")
    return group


@pytest.mark.parametrize("v2", [True, False], ids=["cgroup-v2", "cgroup-v1"])
def test_the_quota_is_the_limit_in_cores_times_the_period(tmp_path, v2):
    group = _layout(tmp_path, v2, "t")
    limit = CpuLimit(0.5, 100.0, root=tmp_path, name="t")
    if v2:
        assert (group / "cpu.max").read_text() == "50000 100000"
        assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"    # the controller enabled below root
    else:
        assert (group / "cpu.cfs_quota_us").read_text() == "50000"
        assert (group / "cpu.cfs_period_us").read_text() == "100000"
    # (the kernel's counters grow while the client runs: 10 more periods, 6 of them throttled, 0.3 s waited)
    (group / "cpu.stat").write_text("nr_periods 14\nnr_throttled 7\n"
                                    + ("throttled_usec 302000\n" if v2 else "throttled_time 302000000\n"))
    assert limit.stats() == {"cores": 0.5, "period_ms": 100.0, "cgroup": "v2" if v2 else "v1", "periods": 10,
                             "throttled_periods": 6, "throttled_s": 0.3}
    for file in group.iterdir():      # (a cgroup's files are the kernel's: rmdir takes them with it)
        file.unlink()
    limit.close()
    assert not group.exists()


def test_a_host_without_a_writable_cpu_controller_is_one_line(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")      # v2 without the cpu controller
    with pytest.raises(UserError) as err:
        CpuLimit(0.5, root=tmp_path)
    message = str(err.value)
    assert "hardware.client_cpu_limit=0.5 needs a cgroup cpu controller" in message and "\n" not in message


def test_a_limited_runs_line_says_how_often_it_ran_out_of_quota():
    """A run measured under a 0.5-core quota (DC/OS's baseline, 2026-11-28): its progress line says so."""
    from kafkasim.validation.measure import _describe
    from kafkasim.validation.store import RunStore
    run = RunStore(Path(__file__).resolve().parent.parent / "validation/data/dcos-halfcore-measure-2026-11-28-s35.jsonl"
                   ).records()[0]
    assert run["environment"]["client_cpu_limit"]["periods"] == 357
    assert ", quota 0.5 cores, throttled in 100 % of periods (35.6 s)" in _describe(run)
    del run["environment"]["client_cpu_limit"]
    assert "quota" not in _describe(run)


@pytest.mark.live
def test_a_process_in_the_cgroup_gets_its_quota_and_no_more():
    """A busy loop held to 0.25 cores for 1.5 s takes ≈ 0.375 CPU-s (not 1.5), and the quota runs out in most
    periods; the cgroup is removed after."""
    try:
        limit = CpuLimit(0.25, 100.0)
    except UserError as exc:        # (not root, or no cpu controller: nothing to measure here)
        pytest.skip(str(exc))
    with limit:
        loop = "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"
        proc = subprocess.Popen([sys.executable, "-c", loop], preexec_fn=limit.enter)
        _, _, usage = os.wait4(proc.pid, 0)
        stats = limit.stats()
    assert not limit.path.exists() and ROOT.exists()
    assert 0.25 <= usage.ru_utime + usage.ru_stime <= 0.5, usage
    assert stats["periods"] >= 10 and stats["throttled_periods"] >= 0.7 * stats["periods"], stats
    assert 0.8 <= stats["throttled_s"] <= 1.4, stats        # waited ≈ 1.5 − 0.375 s
