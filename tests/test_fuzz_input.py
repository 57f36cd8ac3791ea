"""A seeded fuzzer over the shipped examples: mutated values, --set strings and raw YAML (a file cut short, a line of
junk, a value replaced in the text) either predict or are refused in one line, never a traceback, never NaN in the
JSON a user gets."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kafkasim.model.scenario import ScenarioError, load_scenario

from kafkasim.model.scenario_fields import flatten
from kafkasim.model.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.yaml") if "snapshots" not in p.parts)
BAD = ["nan", ".nan", "inf", "-.inf", "-1", "0", "1e400", "9" * 400, "[1, 2", "{a: 1}", "[]", "true", "''",
       "x" * 3000, "&a [*a]", "0.5", "-0", "1e-9", "null"]
SMALL = 1500          # records per fuzzed run: the fuzzer is about input, not speed


def cases(n: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    for i in range(n):
        example = EXAMPLES[i % len(EXAMPLES)]
        keys = sorted(flatten(__import__("yaml").safe_load(example.read_text())))
        sets = [f"workload.records={SMALL}", "workload.warmup_records=0"]
        for _ in range(int(rng.integers(1, 3))):
            key = keys[int(rng.integers(len(keys)))]
            if key in ("workload.records", "workload.warmup_records", "workload.seconds"):
                continue
            sets.append(f"{key}={BAD[int(rng.integers(len(BAD)))]}")
        if rng.random() < 0.2:
            sets.append(BAD[int(rng.integers(len(BAD)))])           # not even key=value
        yield example, sets


def raw_cases(n: int, seed: int = 11):
    """Example files mutated as text: cut at a random point, a junk line inserted, or a value replaced."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        example = EXAMPLES[i % len(EXAMPLES)]
        lines = example.read_text().splitlines()
        how = int(rng.integers(3))
        if how == 0:
            text = "\n".join(lines)[:int(rng.integers(1, len("\n".join(lines))))]
        elif how == 1:
            at = int(rng.integers(len(lines) + 1))
            text = "\n".join(lines[:at] + [BAD[int(rng.integers(len(BAD)))]] + lines[at:])
        else:
            valued = [j for j, line in enumerate(lines) if ": " in line and not line.lstrip().startswith("#")]
            j = valued[int(rng.integers(len(valued)))]
            key = lines[j].split(": ", 1)[0]
            lines[j] = f"{key}: {BAD[int(rng.integers(len(BAD)))]}"
            text = "\n".join(lines)
        yield example.name, text


def _no_nan(value) -> bool:
    text = json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v))
    return "NaN" not in text and "Infinity" not in text


@pytest.mark.parametrize("example, sets", list(cases(700)), ids=lambda v: v.stem if isinstance(v, Path) else None)
def test_fuzzed_input_predicts_or_is_refused_in_one_line(example, sets):
    try:
        scenario = load_scenario(example, sets)
    except ScenarioError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400
        return
    if scenario.workload.records * scenario.producers > 10 * SMALL or scenario.topic.partitions > 2000:
        return                       # (a valid scenario the fuzzer made large: its speed is another issue's)
    try:
        result = simulate(scenario)
    except ScenarioError as exc:
        assert "\n" not in str(exc)
        return
    out = result.to_json()
    assert _no_nan(out["perf_test"]) and _no_nan(out["metrics"]), sets
    assert not any(isinstance(v, float) and math.isnan(v) for v in out["metrics"].values())


@pytest.mark.parametrize("name, text", list(raw_cases(300)), ids=lambda v: v if v.endswith(".yaml") else None)
def test_fuzzed_files_predict_or_are_refused_in_one_line(name, text, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    try:
        scenario = load_scenario(path, [f"workload.records={SMALL}", "workload.warmup_records=0"])
    except ScenarioError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400
        return
    if scenario.workload.records * scenario.producers > 10 * SMALL or scenario.topic.partitions > 2000:
        return
    out = simulate(scenario).to_json()
    assert _no_nan(out["perf_test"]) and _no_nan(out["metrics"])
