"""The Streamlit app's pages under streamlit.testing's AppTest: widgets change the outputs, bad values show a
one-line error (never a traceback), the URL carries the scenario, and the helpers round-trip."""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

pytest.importorskip("streamlit")
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from kafkasim.app import compare_reason, page_validate, ui_fidelity, ui_fields, ui_scenario  # noqa: E402
from kafkasim.app.app_command import add_app_command, streamlit_command  # noqa: E402
from kafkasim.app.ui_run import capped  # noqa: E402
from kafkasim.calibration.fit import predicted, scenario_for  # noqa: E402
from kafkasim.calibration.runs import Observation, load_observations  # noqa: E402
from kafkasim.model.scenario import ScenarioError  # noqa: E402
from kafkasim.model.scenario_fields import FIELDS
from kafkasim.model.simulate import simulate  # noqa: E402
from kafkasim.validation import reproduce as rep  # noqa: E402
from kafkasim.validation.report import (FACTORS, Row, error_by_factor, predict_all, role_of,  # noqa: E402
                                        remeasured, roles_from_matrix, summarise)

from conftest import ROOT  # noqa: E402

APP = Path(__file__).resolve().parent.parent / "app" / "streamlit_app.py"
TIMEOUT = 180            # the machine is shared; a few small simulations per run
CAP = "5000"             # records per producer: keeps each prediction a fraction of a second


def explore(lazy: bool = False, **params: str) -> AppTest:
    """The Explore page; every sidebar section open unless lazy (then only Producer, as a user first sees it)."""
    at = AppTest.from_string("from kafkasim.app.page_explore import render\nrender()", default_timeout=TIMEOUT)
    at.query_params.update({"cap": CAP, **params})
    if not lazy:
        for section, _, _ in ui_fields.SECTIONS:
            at.session_state[f"x_exp:{section}"] = True
    return at.run()


def compare(*specs: str) -> AppTest:
    at = AppTest.from_string("from kafkasim.app.page_compare import render\nrender()", default_timeout=TIMEOUT)
    at.query_params["cap"] = CAP
    if specs:
        at.query_params["c"] = list(specs)
    return at.run()


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def param(at: AppTest, name: str) -> list[str]:
    value = at.query_params.get(name, [])
    return [value] if isinstance(value, str) else list(value)


def no_traceback(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


# --- Explore --------------------------------------------------------------------------------------------------

def test_explore_shows_a_prediction_for_the_default_example():
    at = explore()
    no_traceback(at)
    assert not at.error
    assert at.selectbox(key="x_pick").value == ui_scenario.DEFAULT_EXAMPLE
    assert float(metric(at, "throughput (records/s)").replace(",", "")) > 0
    assert any("records sent" in c.value for c in at.code)            # perf-test's own lines
    verdicts = [w.value for w in list(at.warning) + list(at.success) + list(at.info)]
    assert any("Bottleneck:" in v for v in verdicts)


def test_explore_says_how_a_validated_profile_did_on_held_out_runs():
    at = explore(lazy=True, example="local-1broker")          # local-2core, which `make fidelity` validated
    no_traceback(at)
    assert any(c.value.startswith("profile local-2core on 20 held-out configurations: throughput a median")
               for c in at.caption)
    kontur = explore(lazy=True)                               # a hand-derived profile claims nothing
    no_traceback(kontur)
    assert not any("held-out configurations" in c.value for c in kontur.caption)


def test_every_field_has_a_widget_labelled_with_its_kafka_name_and_doc():
    at = explore()
    assert "xf:hardware.worker.record_us" not in {w.key for w in at.text_input}   # cost parameters on request
    at.toggle(key="x_show_costs").set_value(True).run()
    widgets = {w.key: w for kind in (at.text_input, at.selectbox, at.checkbox) for w in kind}
    for key, field in FIELDS.items():
        w = widgets[ui_fields.widget_key(key)]
        assert w.label == ui_fields.kafka_name(key)
        assert field.doc in w.help
    # Producer properties say the client version's default (kontur-2020/I is Java 2.4: linger.ms 0).
    assert "Default for java 2.4: 0" in widgets["xf:producer.linger.ms"].help


def test_closed_sections_and_tabs_draw_nothing_until_opened():
    at = explore(lazy=True)
    keys = {w.key for kind in (at.text_input, at.selectbox, at.checkbox) for w in kind}
    assert "xf:producer.batch.size" in keys and "xf:topic.partitions" not in keys
    assert not at.dataframe                                           # the metrics tab is closed
    at.session_state["x_exp:topic"] = True
    at.session_state["x_tab"] = "Producer metrics"
    at.run()
    no_traceback(at)
    assert at.text_input(key="xf:topic.partitions").value == "3"
    table = at.dataframe[0].value
    assert "producer-metrics:batch-size-avg" in set(table["metric"])


def test_the_brokers_tab_marks_a_broker_that_is_down():
    at = explore(lazy=True, example="local-3broker-rf3", **{"cluster.offline_brokers": "1"})
    at.session_state["x_tab"] = "Brokers"
    at.run()
    no_traceback(at)
    table = at.dataframe[0].value
    assert list(table["state"]) == ["up", "up", "offline"]
    assert list(table["leader partitions"]) == [3, 3, 0]


def test_changing_batch_size_changes_the_prediction_and_the_url():
    at = explore()
    before = metric(at, "throughput (records/s)")
    at.text_input(key="xf:producer.batch.size").set_value("65536").run()
    no_traceback(at)
    assert metric(at, "throughput (records/s)") != before
    assert param(at, "producer.batch.size") == ["65536"]
    assert param(at, "example") == [ui_scenario.DEFAULT_EXAMPLE]


def test_a_bad_value_shows_an_error_not_a_traceback():
    at = explore()
    at.text_input(key="xf:producer.batch.size").set_value("64k").run()
    no_traceback(at)
    assert any("producer.batch.size='64k' is not allowed" in e.value for e in at.error)
    assert not at.metric                                              # no stale prediction under the error
    at.text_input(key="xf:producer.batch.size").set_value("32768").run()
    assert not at.error and at.metric


def test_a_cross_field_conflict_shows_kafkas_own_message():
    at = explore()
    at.checkbox(key="xf:producer.enable.idempotence").check().run()   # kontur-2020/I sets acks=all: fine
    assert not at.error
    at.selectbox(key="xf:producer.acks").select("1").run()
    no_traceback(at)
    assert any("enable.idempotence=true needs acks=all" in e.value for e in at.error)


def test_an_edited_cost_parameter_is_shown_and_changes_the_prediction():
    at = explore(**{"hardware.worker.record_us": "40"})
    no_traceback(at)
    assert at.text_input(key="xf:hardware.worker.record_us").value == "40"
    slow = metric(at, "time in send() (us)")
    at.text_input(key="xf:hardware.worker.record_us").set_value("").run()      # blank: the profile's value
    assert float(metric(at, "time in send() (us)")) < float(slow)
    assert at.text_input(key="xf:hardware.worker.record_us").value not in ("", "40")


def test_the_url_carries_the_scenario():
    at = explore(example="vm-2core/03-50k-b8192", **{"producer.linger.ms": "5", "topic.partitions": "2"})
    no_traceback(at)
    assert at.selectbox(key="x_pick").value == "vm-2core/03-50k-b8192"
    assert at.text_input(key="xf:producer.linger.ms").value == "5"
    assert at.text_input(key="xf:topic.partitions").value == "2"
    assert at.text_input(key="xf:producer.batch.size").value == "8192"  # from the example itself


def test_an_unknown_example_in_the_url_is_an_error_not_a_traceback():
    at = explore(example="no-such-example")
    no_traceback(at)
    assert any("example 'no-such-example' does not exist" in e.value for e in at.error)


def test_untouched_producer_fields_follow_the_client_version_defaults():
    at = explore(example=ui_scenario.NO_EXAMPLE, **{"client.version": "3.9", "workload.records": "5000"})
    assert at.text_input(key="xf:producer.linger.ms").value == "0"
    at.text_input(key="xf:client.version").set_value("4.0").run()
    no_traceback(at)
    assert at.text_input(key="xf:producer.linger.ms").value == "5"   # Java 4.x's default


def test_a_blank_producer_field_takes_the_client_default():
    at = explore()                                                    # kontur-2020/I sets batch.size 16384
    at.text_input(key="xf:producer.linger.ms").set_value("").run()    # it sets linger.ms 5; Java 2.4's default is 0
    no_traceback(at)
    assert at.text_input(key="xf:producer.linger.ms").value == "0"


def test_switching_library_takes_a_version_it_has_and_its_defaults():
    at = explore()                                                    # Java 2.4
    at.selectbox(key="xf:client.library").select("kafka-python").run()
    no_traceback(at)
    assert not at.error
    assert at.text_input(key="xf:client.version").value == "3.0"
    assert at.text_input(key="xf:producer.buffer.memory").value == "0"  # kafka-python 3.x: unbounded


def test_loading_a_yaml_file_sets_the_fields_and_the_url():
    at = explore()
    text = b"name: mine\nproducer: {batch.size: 65536, linger.ms: 20}\nworkload: {records: 4000}\n"
    at.file_uploader(key="x_upload").upload("mine.yaml", text, "application/x-yaml").run()
    no_traceback(at)
    assert not at.error
    assert at.selectbox(key="x_pick").value == ui_scenario.NO_EXAMPLE
    assert at.text_input(key="xf:producer.batch.size").value == "65536"
    assert at.text_input(key="xf:producer.linger.ms").value == "20"
    assert param(at, "producer.batch.size") == ["65536"] and param(at, "name") == ["mine"]


def test_loading_a_bad_yaml_file_is_an_error():
    at = explore()
    at.file_uploader(key="x_upload").upload("bad.yaml", b"producer: [1\n", "application/x-yaml").run()
    no_traceback(at)
    assert any("bad.yaml: not valid YAML" in e.value for e in at.error)
    assert at.metric                                                  # the previous scenario still shows


def test_picking_another_example_resets_the_fields():
    at = explore()
    at.text_input(key="xf:producer.batch.size").set_value("65536").run()
    at.selectbox(key="x_pick").select("kontur-2020/II").run()
    no_traceback(at)
    assert at.text_input(key="xf:producer.batch.size").value == "32768"
    assert "producer.batch.size" not in at.query_params


def test_the_sweep_runs_behind_its_button():
    at = explore()
    assert not at.dataframe or all("bottleneck" not in df.value.columns for df in at.dataframe)
    at.selectbox(key="x_sweep_key").select("producer.batch.size").run()
    at.text_input(key="x_sweep_values:producer.batch.size").set_value("16384, 65536").run()
    at.button(key="x_sweep_run").click().run()
    no_traceback(at)
    sweep = next(df.value for df in at.dataframe if "bottleneck" in df.value.columns)
    assert list(sweep["value"]) == ["16384", "65536"]
    assert sweep["records/s"].iloc[0] != sweep["records/s"].iloc[1]


def test_a_sweep_over_a_choice_marks_invalid_points():
    at = explore(**{"producer.enable.idempotence": "true"})          # needs acks=all: acks 0 and 1 are invalid
    at.selectbox(key="x_sweep_key").select("producer.acks").run()
    at.button(key="x_sweep_run").click().run()
    no_traceback(at)
    sweep = next(df.value for df in at.dataframe if "bottleneck" in df.value.columns)
    assert list(sweep["value"]) == ["0", "1", "all"]
    assert sweep["bottleneck"].iloc[0].startswith("invalid: producer.enable.idempotence=true needs acks=all")
    assert sweep["records/s"].iloc[2] > 0


def test_any_number_field_can_be_swept_around_its_value():
    at = explore()
    at.selectbox(key="x_sweep_key").select("hardware.rtt_ms").run()
    values = at.text_input(key="x_sweep_values:hardware.rtt_ms").value
    rtt = float(at.text_input(key="xf:hardware.rtt_ms").value)
    assert values == ", ".join(f"{rtt * f:g}" for f in (0.25, 0.5, 1, 2, 4))
    at.button(key="x_sweep_run").click().run()
    no_traceback(at)
    sweep = next(df.value for df in at.dataframe if "bottleneck" in df.value.columns)
    assert len(sweep) == 5 and sweep["records/s"].notna().all()


def test_a_bad_sweep_value_is_an_error():
    at = explore()
    at.text_input(key="x_sweep_values:producer.batch.size").set_value("16384, big").run()
    at.button(key="x_sweep_run").click().run()
    no_traceback(at)
    assert any("producer.batch.size='big'" in e.value for e in at.error)


def test_explore_opens_compare_with_its_scenario_and_a_variant():
    at = explore(**{"producer.linger.ms": "10"})
    url = at.get("link_button")[0].proto.url
    assert url.startswith("./compare?")
    query = parse_qs(urlsplit(url).query)
    assert query["c"] == ["kontur-2020/I;producer.linger.ms=10",
                          "kontur-2020/I;producer.linger.ms=10;producer.batch.size=32768"]
    at = compare(*query["c"])
    no_traceback(at)
    assert "`producer.batch.size` 16384 → 32768" in " ".join(m.value for m in at.markdown)


# --- Compare --------------------------------------------------------------------------------------------------

def test_compare_shows_deltas_and_the_reason():
    at = compare()
    no_traceback(at)
    assert not at.error
    labels = [m.label for m in at.metric]
    assert "A: records/s" in labels and "B: records/s" in labels
    reason = " ".join(m.value for m in at.markdown)
    assert "**B** is faster" in reason
    assert "held back by its" in reason or "Nothing in A is saturated" in reason
    assert "`producer.batch.size` 16384 → 65536" in reason


def test_compare_follows_a_changed_scenario():
    at = compare()
    before = metric(at, "B: records/s")
    at.text_area(key="c_ov1").set_value("producer.batch.size=8192").run()
    no_traceback(at)
    assert metric(at, "B: records/s") != before
    assert param(at, "c")[1] == "kontur-2020/I;producer.batch.size=8192"


def test_compare_bad_override_is_an_error():
    at = compare("kontur-2020/I", "kontur-2020/I;producer.batch.sise=1")
    no_traceback(at)
    assert any("unknown key 'producer.batch.sise'" in e.value for e in at.error)


def test_compare_three_scenarios():
    at = compare("kontur-2020/I", "kontur-2020/II", "kontur-2020/III")
    no_traceback(at)
    assert {"A: records/s", "B: records/s", "C: records/s"} <= {m.label for m in at.metric}


def test_compare_shows_every_scenarios_consumer_groups():
    at = compare("kontur-2020/I;consumers.groups=1", "kontur-2020/I;consumers.groups=2")
    no_traceback(at)
    table = next(df.value for df in at.dataframe if "end-to-end p99 ms" in df.value.columns)
    assert list(table["scenario"]) == ["A", "B", "B"] and list(table["group"]) == [0, 0, 1]
    assert (table["records/s (fetch)"] > 0).all()


# --- the whole app and the command ------------------------------------------------------------------------------

def test_the_app_file_runs():
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["cap"] = CAP
    at.run()
    no_traceback(at)
    assert at.metric


def test_app_command_defaults_to_localhost():
    parser = argparse.ArgumentParser()
    add_app_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["app"])
    assert (args.port, args.host) == (8501, "127.0.0.1")
    cmd = streamlit_command(args.port, args.host)
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4].endswith("streamlit_app.py")
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert parser.parse_args(["app", "--port", "9000", "--host", "0.0.0.0"]).port == 9000


# --- helpers ----------------------------------------------------------------------------------------------------

def test_saved_yaml_loads_back_to_the_same_scenario():
    base = ui_scenario.example_raw("kontur-2020/I")
    s = ui_scenario.build(base, {"producer.linger.ms": "10", "cluster.broker.num.io.threads": "4"})
    text = ui_scenario.to_yaml(s, {**base, "producer.linger.ms": 1, "cluster.broker.num.io.threads": 1})
    again = ui_scenario.build(ui_scenario.parse_yaml(text, "saved"), {})
    assert again == s
    assert "broker:" in text and "batch.size: 16384" in text


def test_a_file_that_is_not_a_scenario_is_one_line_error():
    with pytest.raises(ScenarioError, match="bad.yaml: not valid YAML at line"):
        ui_scenario.parse_yaml("producer:\n  batch.size: [1\n", "bad.yaml")
    with pytest.raises(ScenarioError, match="must be a mapping"):
        ui_scenario.parse_yaml("- 1\n", "list.yaml")
    assert "snapshots/kontur-2020-I" not in ui_scenario.example_names()


def test_every_example_scenario_is_offered_one_brokers_own_hardware_included():
    """kip-794's and slow-broker's examples give one broker hardware of its own (hardware.brokers.<id>.<key>)."""
    names = ui_scenario.example_names()
    assert {"slow-broker", "kip-794/1-old-default", "dcos-2018/1-baseline"} <= set(names)


def test_without_examples_the_app_starts_from_the_field_defaults(monkeypatch, tmp_path):
    monkeypatch.setattr(ui_scenario, "EXAMPLES_DIR", tmp_path / "missing")
    assert ui_scenario.example_names() == []
    assert ui_scenario.from_query({}) == (ui_scenario.NO_EXAMPLE, {}, [])
    assert ui_scenario.build(ui_scenario.example_raw(ui_scenario.NO_EXAMPLE), {}).name == FIELDS["name"].default


def test_the_cap_keeps_the_warmup_share():
    s = ui_scenario.build(ui_scenario.example_raw("kontur-2020/I"), {})
    small, note = capped(s, 10_000)
    assert (small.workload.records, small.workload.warmup_records) == (10_000, 1_000)
    assert "10,000 of the scenario's 1,000,000" in note
    assert capped(s, 0) == (s, None)


def test_the_reason_names_the_slower_ones_bottleneck():
    a = ui_scenario.build(ui_scenario.example_raw("kontur-2020/I"), {"workload.records": 5000,
                                                                     "workload.warmup_records": 500})
    b = a.replace(**{"producer.batch.size": 65536})
    ra, rb = simulate(a), simulate(b)
    text = compare_reason.explain("A", ra, a.flat(), "B", rb, b.flat())
    assert text.startswith("**B** is faster")
    assert ra.verdict.get("busiest", ra.verdict["bottleneck"]) in text
    same = compare_reason.explain("A", ra, a.flat(), "A'", ra, a.flat())
    assert "as fast" in same and "Their settings are the same" in same


def fake_result(rate: float, bottleneck: str, busy: float, util: dict, queue_ms: float = 1.0):
    from types import SimpleNamespace
    perf = {"records_per_sec": rate, "avg_latency_ms": queue_ms + 2, "p99_ms": int(queue_ms * 2) + 3}
    metrics = {"record-queue-time-avg": queue_ms, "batch-size-avg": 16000.0, "request-latency-avg": 2.0}
    return SimpleNamespace(perf_test=perf, metrics=metrics, utilisation=util,
                           verdict={"bottleneck": bottleneck, "utilisation": busy, "evidence": f"{bottleneck} facts"})


def test_the_reason_cites_the_saturated_resource_and_its_relief():
    slow = fake_result(50_000, "sender in-flight window", 0.97, {"sender in-flight window": 0.97, "network": 0.2})
    fast = fake_result(90_000, "network", 0.9, {"sender in-flight window": 0.3, "network": 0.9})
    text = compare_reason.explain("A", slow, {"producer.batch.size": 16384}, "B", fast, {"producer.batch.size": 65536})
    assert text.startswith("**B** is faster: 90,000 records/s against 50,000 (1.80×).")
    assert "A is held back by its **sender in-flight window** (97% busy): sender in-flight window facts." in text
    assert "In B the sender in-flight window is 30% busy — no longer the limit." in text
    assert "B's own limit is its **network** (90%)" in text


def test_the_reason_without_saturation_points_at_the_waiting():
    slow = fake_result(50_000, "worker threads", 0.3, {"worker threads": 0.3}, queue_ms=40)
    fast = fake_result(90_000, "worker threads", 0.5, {"worker threads": 0.5}, queue_ms=2)
    text = compare_reason.explain("A", slow, {}, "B", fast, {})
    assert "Nothing in A is saturated (busiest: worker threads at 30%)" in text
    assert "record-queue-time-avg 40.0 ms in A against 2.0 ms" in text


# --- Plan -----------------------------------------------------------------------------------------------------

def plan_page() -> AppTest:
    return AppTest.from_string(
        "from kafkasim.app import page_plan\npage_plan.render()", default_timeout=300).run()


def number(at: AppTest, label: str):
    """The plan form's number input with this label."""
    return next(n for n in at.number_input if n.label == label)


def small_plan(at: AppTest) -> AppTest:
    """The plan form set for 20k records/s on at most 2 brokers, RF 1, acks=1."""
    number(at, "target records/s").set_value(20_000)
    number(at, "replication factor").set_value(1)
    at.selectbox[0].set_value("1")                  # acks
    number(at, "most brokers").set_value(2)
    return at


def test_plan_page_finds_a_configuration_for_a_small_target():
    at = small_plan(plan_page())
    at.button[0].click().run()
    no_traceback(at)
    assert not at.error
    text = at.code[0].value
    assert "brokers" in text and "records/s" in text
    table = at.dataframe[0].value                   # the plan and its runner-ups, as the text has them
    assert table.iloc[0][""] == "plan" and f"PLAN   {table.iloc[0]['brokers']} broker" in text
    assert int(metric(at, "brokers")) == table.iloc[0]["brokers"]
    assert "payload random-letters" in " ".join(c.value for c in at.caption)


def test_plan_page_takes_a_group_catching_up():
    at = small_plan(plan_page())
    number(at, "a group catching up: records behind (0 = none)").set_value(50_000_000)
    number(at, "… within seconds").set_value(600)
    at.button[0].click().run()
    no_traceback(at)
    assert not at.error
    assert "a group 50,000,000 records behind catching up in 600 s" in at.code[0].value


def test_plan_page_rejects_too_few_brokers_for_the_replication_factor():
    at = plan_page()
    number(at, "replication factor").set_value(3)
    number(at, "most brokers").set_value(2)
    at.button[0].click().run()
    no_traceback(at)
    assert "RF 3 needs at least 3" in at.error[0].value


# --- Validate ---------------------------------------------------------------------------------------------------

RUNS = ROOT / "validation" / "data" / "local-quiet.jsonl"
VALIDATE_CAP = "2000"      # records per configuration: a tiny store predicts in about a second


def validate_page(tab: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_string("from kafkasim.app import page_validate\npage_validate.render()", default_timeout=TIMEOUT)
    at.query_params.update(params)
    if tab:
        at.session_state["v_tab"] = tab
    return at.run()


def predicted_tiny(tiny_store: Path, cap: str = VALIDATE_CAP) -> AppTest:
    """The tiny store with the roles its runs carry, predicted on local-2core."""
    at = validate_page(runs=str(tiny_store), cap=cap, profile="local-2core", matrix="none")
    assert at.selectbox(key="v_matrix").value == page_validate.NO_MATRIX
    at.button(key="v_predict").click().run()
    no_traceback(at)
    assert not at.error
    return at


def chart_data(chart) -> list[pd.DataFrame]:
    """The data sets of an Altair chart as the app sent them (Arrow IPC streams)."""
    return [pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.proto.datasets]


def test_validate_shows_the_reference_runs_with_the_matrix_roles():
    at = validate_page()
    no_traceback(at)
    assert not at.error
    assert at.selectbox(key="v_store").value == str(RUNS)
    assert at.selectbox(key="v_client").value == "java"
    profile = at.selectbox(key=f"v_profile:{RUNS}:java").value
    fitted = ui_fidelity.REPORT_DIR / "local-quiet-java-profile.yaml"
    assert profile == (str(fitted) if fitted.is_file() else ui_fidelity.BASE_PROFILE)
    table = at.dataframe[0].value
    observations = load_observations(RUNS, library="java")
    roles = roles_from_matrix(ui_fidelity.MATRIX_DIR / "local.yaml")
    assert list(table["config"]) == [o.config_id for o in observations]
    assert list(table["role"]) == [role_of(o, roles) for o in observations]
    assert list(table["measured records/s"]) == [o.measured["records_per_sec"] for o in observations]
    assert list(table["run range"]) == [o.spread["records_per_sec"] for o in observations]
    assert "predicted records/s" not in table                       # nothing predicted before the button
    assert at.button(key="v_predict").label == f"Predict {len(observations)} configurations"


def test_validate_url_names_the_store_client_profile_and_cap():
    at = validate_page(runs="validation/data/local-quiet.jsonl", client="kafka-python", cap="3000",
                       profile="validation/reports/local-quiet-kafka-python-profile.yaml")
    no_traceback(at)
    assert at.selectbox(key="v_store").value == str(RUNS)
    assert at.selectbox(key="v_client").value == "kafka-python"
    profile = at.selectbox(key=f"v_profile:{RUNS}:kafka-python")
    fitted = str(ui_fidelity.REPORT_DIR / "local-quiet-kafka-python-profile.yaml")
    assert profile.value == (fitted if Path(fitted).is_file() else ui_fidelity.BASE_PROFILE)
    assert at.number_input(key="v_cap").value == 3000
    assert set(at.dataframe[0].value["config"]) == {o.config_id for o in load_observations(RUNS, "kafka-python")}


def test_validate_predicts_a_small_run_store(tiny_store):
    at = predicted_tiny(tiny_store)
    table = at.dataframe[0].value.set_index("config")
    observations = load_observations(tiny_store, library="java")
    assert list(table.index) == [o.config_id for o in observations]
    for obs in observations:                                         # the page simulates what validate would
        pred = predicted(simulate(scenario_for(obs, "local-2core", {}, int(VALIDATE_CAP))))
        row = table.loc[obs.config_id]
        assert row["predicted records/s"] == pytest.approx(pred["records_per_sec"])
        assert row["error"] == pytest.approx(pred["records_per_sec"] / obs.measured["records_per_sec"] - 1)
        assert row["p99 predicted / measured"] == pytest.approx(pred["p99_ms"] / obs.measured["p99_ms"])
    held = table[table["role"] == "held-out"]
    figures = {m.label: m.value for m in at.metric}
    assert figures["held-out throughput error"] == f"{100 * held['error'].abs().median():.1f} %"
    assert figures["noise floor"] == "0.0 %"                          # one run per held-out configuration
    throttled = table.loc[next(o.config_id for o in observations if o.throttled), "p99 predicted / measured"]
    assert figures["throttled p99 predicted / measured"] == f"{round(throttled, 3):g}"
    assert (table[table["role"] == "calibration"]["run range"] > 0).all()   # its two runs differ


def test_validate_scatter_has_log_axes_the_diagonal_and_both_roles(tiny_store):
    at = predicted_tiny(tiny_store)
    table = at.dataframe[0].value
    scatters = [c for c in at.get("vega_lite_chart") if '"title": "predicted ' in c.proto.spec]
    assert len(scatters) == 2                                         # throughput and p99
    spec = json.loads(scatters[0].proto.spec)
    points = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    assert points["encoding"]["x"]["scale"]["type"] == points["encoding"]["y"]["scale"]["type"] == "log"
    diagonal, data = chart_data(scatters[0])
    assert list(diagonal["measured"]) == list(diagonal["predicted"])  # the y = x line
    assert diagonal["measured"].min() <= min(data["measured"].min(), data["predicted"].min())
    assert sorted(data["measured"]) == sorted(table["measured records/s"])
    assert sorted(data["predicted"]) == sorted(table["predicted records/s"])
    assert set(data["role"]) == {"calibration", "held-out"}
    assert any(s.value == "Held-out throughput error by factor" for s in at.subheader)


def test_validate_reuses_predictions_until_the_cap_changes(tiny_store):
    predicted_tiny(tiny_store)
    again = validate_page(runs=str(tiny_store), cap=VALIDATE_CAP, profile="local-2core")
    assert not any(b.key == "v_predict" for b in again.button)      # cached: shown at once
    assert "predicted records/s" in again.dataframe[0].value
    again.number_input(key="v_cap").set_value(3000).run()
    assert again.button(key="v_predict")
    assert "predicted records/s" not in again.dataframe[0].value


def test_validate_takes_an_uploaded_run_store(tiny_store):
    at = validate_page()
    at.selectbox(key="v_store").select(page_validate.OTHER).run()
    at.file_uploader(key="v_upload").upload("mine.jsonl", tiny_store.read_bytes(), "application/jsonl").run()
    no_traceback(at)
    assert not at.error
    assert len(at.dataframe[0].value) == len(load_observations(tiny_store))


@pytest.mark.parametrize("content, message", [(None, "does not exist"), ("{not json\n", ":1: not a JSON line")])
def test_validate_bad_run_store_is_an_error(tmp_path, content, message):
    path = tmp_path / "runs.jsonl"
    if content is not None:
        path.write_text(content)
    at = validate_page(runs=str(path))
    no_traceback(at)
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_validate_an_unknown_profile_is_an_error(tiny_store, tmp_path):
    at = validate_page(runs=str(tiny_store), cap=VALIDATE_CAP)
    broken = tmp_path / "broken.yaml"
    broken.write_text("hardware: {worker.record_uss: 1}\n")
    at.session_state["v_fitted"] = [str(broken)]
    at.run()
    at.selectbox(key=f"v_profile:{tiny_store}:java").select(str(broken)).run()
    at.button(key="v_predict").click().run()
    no_traceback(at)
    assert any("worker.record_uss" in e.value for e in at.error)


def test_validate_shows_the_committed_reports():
    reports = ui_fidelity.reports()
    if not reports:
        pytest.skip("no committed reports under validation/reports")
    at = validate_page(tab="Committed reports")
    no_traceback(at)
    text, images = ui_fidelity.report_parts(reports[0])
    assert any(m.value == text for m in at.markdown)
    assert not any("![" in m.value for m in at.markdown)            # the image links became images
    assert len(at.get("image")) == len(images) > 0


def test_validate_shows_the_published_studies_too():
    """`kafkasim reproduce --out validation/reports/published` writes one report per study: the page offers them."""
    published = [p for p in ui_fidelity.reports() if p.parent.name == "published"]
    assert [p.stem for p in published] == sorted(rep.STUDIES)
    at = validate_page(tab="Committed reports")
    at.selectbox(key="v_report").select(str(published[0])).run()
    no_traceback(at)
    text, images = ui_fidelity.report_parts(published[0])
    assert any(m.value == text for m in at.markdown) and "trend check" in text
    assert len(at.get("image")) == len(images) == 1
    assert "published/kontur-2020.md" in at.selectbox(key="v_report").options


def test_validate_fits_a_profile_and_offers_it(tiny_store):
    at = validate_page(tab="Fit a profile", runs=str(tiny_store), cap="1000")
    at.selectbox(key="v_matrix").select(page_validate.NO_MATRIX).run()
    assert "to the 1 calibration configurations" in " ".join(c.value for c in at.caption)
    at.number_input(key="v_fit_evaluations").set_value(2).run()
    at.button(key="v_fit_run").click().run()
    no_traceback(at)
    assert not at.error
    fitted = at.session_state["v_fit"]
    profile = yaml.safe_load(fitted["yaml"])
    params = at.dataframe[0].value.set_index("parameter")["value"]
    assert profile["clients"]["java"]["worker.record_us"] == pytest.approx(params["worker.record_us"])
    assert profile["provenance"]["java"]["configs"] == [load_observations(tiny_store, role="calibration")[0].config_id]
    assert at.download_button(key="v_fit_download")
    assert ui_fidelity.shown(fitted["path"]) in at.selectbox(key=f"v_profile:{tiny_store}:java").options


def test_validate_tables_and_factors_come_from_the_report_helpers(tiny_store):
    observations = load_observations(tiny_store)
    rows = [Row(o, role_of(o, {}), {k: 2 * v for k, v in o.measured.items()}) for o in observations]
    table = ui_fidelity.table(rows)
    assert list(table["error"]) == pytest.approx([1.0] * len(rows))   # predicted twice the measured: +100 %
    factors = ui_fidelity.factor_frame(rows)
    assert set(factors["factor"]) <= {label for label, _, _ in FACTORS}
    assert list(factors["error %"]) == pytest.approx([100.0] * len(factors))
    assert list(factors[factors["factor"] == "throttled"]["value"]) == ["no", "yes"]
    seen = []
    predict_all(observations[:1], "local-2core", 1000, progress=lambda done, total, obs: seen.append((done, total)))
    assert seen == [(0, 1)]


def test_the_summary_shows_throttled_p99_beside_how_far_single_runs_repeat():
    runs = [{"result": {"latency_p99_ms": p99, "records_per_sec": 1000.0}} for p99 in (100.0, 400.0, 200.0)]
    throttled = Observation("t", "java", "held-out", {"workload.throughput": 1000},
                            {"p99_ms": 200.0, "records_per_sec": 1000.0}, {}, 3, runs)
    s = summarise([Row(throttled, "held-out", {"p99_ms": 300.0, "records_per_sec": 1000.0})])
    assert s["throttled_p99_ratios"] == [1.5]
    assert s["throttled_p99_run_ratios"] == [(0.5, 2.0)]
    assert math.isnan(s["sender_cpu_ratio_median"])          # these runs did not record their threads' CPU


def test_the_summary_compares_the_senders_cpu_where_runs_recorded_it():
    runs = [{"result": {"records_per_sec": 1000.0},
             "environment": {"cpu_during_run": {"client_threads": {"sender": cpu, "worker": 2.0}}}} for cpu in (1.0, 3.0)]
    obs = Observation("c", "java", "calibration", {}, {"records_per_sec": 1000.0}, {}, 2, runs)
    assert obs.run_values("sender_cpu_s") == [1.0, 3.0]
    obs.measured["sender_cpu_s"] = 2.0
    s = summarise([Row(obs, "calibration", {"records_per_sec": 1000.0, "sender_cpu_s": 3.0})])
    assert s["sender_cpu_ratio_median"] == 1.5


def test_another_sessions_runs_give_the_noise_between_sessions_and_the_models_error_against_them():
    def obs(config_id, role, rate):
        return Observation(config_id, "java", role, {}, {"records_per_sec": rate}, {}, 1)
    rows = [Row(obs("a", "held-out", 1000.0), "held-out", {"records_per_sec": 1100.0}),
            Row(obs("b", "held-out", 1000.0), "held-out", {"records_per_sec": 1000.0}),
            Row(obs("c", "calibration", 1000.0), "calibration", {"records_per_sec": 1000.0})]
    # "c" is a calibration configuration and "d" was not measured in the reference session: neither counts
    again = [obs("a", "held-out", 1200.0), obs("b", "held-out", 900.0), obs("c", "held-out", 5000.0),
             obs("d", "held-out", 10.0)]
    s = remeasured(rows, again)
    assert s["remeasured_configs"] == 2
    assert s["session_noise_mdape"] == pytest.approx(0.15)                    # median of 20 % and 10 %
    assert s["throughput_mdape_remeasured"] == pytest.approx((1 / 12 + 1 / 9) / 2)   # 1100 vs 1200, 1000 vs 900
    assert s["remeasured_rate"] == {"a": 1200.0, "b": 900.0}
    assert remeasured(rows, []) == {}


def test_error_by_factor_orders_values_by_number():
    rows = [Row(Observation(f"b{size}", "java", "held-out", {"producer.batch.size": size}, {"records_per_sec": 100.0},
                            {}, 1), "held-out", {"records_per_sec": 110.0}) for size in (262144, 16384, 65536)]
    groups = error_by_factor(rows)["batch.size"]
    assert list(groups) == ["16 KiB", "64 KiB", "256 KiB"]
    assert groups["64 KiB"] == [pytest.approx(10.0)]


def test_explore_and_compare_open_on_what_predict_says():
    """No cap by default: the first figures a user sees are `kafkasim predict`'s for the same scenario."""
    from kafkasim.model.scenario import load_scenario
    expected = simulate(load_scenario(ROOT / "examples" / f"{ui_scenario.DEFAULT_EXAMPLE}.yaml")).perf_test
    at = AppTest.from_string("from kafkasim.app.page_explore import render\nrender()", default_timeout=TIMEOUT).run()
    no_traceback(at)
    assert "cap" not in at.query_params
    shown = float(metric(at, "throughput (records/s)").replace(",", ""))
    assert shown == pytest.approx(expected["records_per_sec"], abs=1)
    assert not any("Simulating" in i.value for i in at.info)                # no cap note
    both = AppTest.from_string("from kafkasim.app.page_compare import render\nrender()", default_timeout=TIMEOUT)
    both.query_params["c"] = [ui_scenario.DEFAULT_EXAMPLE, ui_scenario.DEFAULT_EXAMPLE]
    both = both.run()
    no_traceback(both)
    assert f"{expected['records_per_sec']:,.0f}" in " ".join(str(m.value) for m in both.metric)


def test_the_apps_default_simulates_every_example_as_predict_does():
    """Explore, Compare and the sweep run (ui_run.run) what capped(s, DEFAULT_CAP) gives: the scenario itself, for
    every shipped example, so their figures are predict's."""
    from kafkasim.app.ui_run import DEFAULT_CAP
    from kafkasim.model.scenario import load_scenario
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        if "snapshots" not in path.parts:
            s = load_scenario(path)
            assert capped(s, DEFAULT_CAP) == (s, None), path


def test_a_link_names_its_keys_the_page_left_out():
    """A misspelt key in a shared link is named on the page; a broker's own hardware key is taken."""
    at = explore(lazy=True, example="local-3broker-rf3", **{"producer.batch.sise": "1", "workload.records": "5000",
                                                            "workload.warmup_records": "500",
                                                            "hardware.brokers.1.extra_latency_ms": "5"})
    no_traceback(at)
    assert any("`producer.batch.sise` is not a scenario key" in w.value for w in at.warning)
    assert not any("hardware.brokers" in w.value for w in at.warning)
    assert param(at, "hardware.brokers.1.extra_latency_ms") == ["5"]


def test_the_brokers_table_shows_a_brokers_own_hardware_and_its_share():
    from kafkasim.app.ui_charts import brokers_table
    from kafkasim.model.scenario import load_scenario
    r = simulate(load_scenario(ROOT / "examples" / "slow-broker.yaml", ["workload.records=20000",
                                                                         "workload.warmup_records=2000"]))
    table = brokers_table(r.brokers)
    assert list(table["own hardware"]) == ["", "extra_latency_ms=20", ""]
    assert table["share of bytes in"].sum() == pytest.approx(1.0)
