"""Scenario fields as Streamlit widgets: labels, help and defaults come from the model's field table (FIELDS).

Nothing here knows what a field means: the widget kind follows Field.kind, the label is the Kafka name, the help
is the field's doc plus its default (the client version's default for producer properties).
"""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from kafkasim.model import clients
from kafkasim.model.fields import fmt
from kafkasim.model.scenario_fields import FIELDS

# Expanders in the order a user thinks about a run; the first is open.
SECTIONS = (
    ("producer", "Producer (Kafka properties)", True),
    ("workload", "Workload (perf-test options)", False),
    ("topic", "Topic", False),
    ("cluster", "Cluster and brokers", False),
    ("client", "Client, producers and threads", False),
    ("consumers", "Consumers (groups; Kafka consumer properties)", False),
    ("network", "Network", False),
    ("hardware", "Hardware profile", False),
    ("model", "Model run control", False),
)
TOP_LEVEL_SECTION = "client"          # name, seed, producers, threads sit with the client


def section_of(key: str) -> str:
    head = key.split(".", 1)[0]
    if head == "consumer":            # the consumer's properties sit with the groups that use them
        return "consumers"
    return head if "." in key else TOP_LEVEL_SECTION


def kafka_name(key: str) -> str:
    """The label: the key without its section (`producer.batch.size` -> `batch.size`)."""
    return key.split(".", 1)[1] if "." in key else key


def widget_key(key: str, prefix: str = "xf") -> str:
    return f"{prefix}:{key}"


# Hardware cost parameters (per record, byte, request; codecs): many, rarely changed, so behind a toggle.
COST_PREFIXES = ("hardware.worker.", "hardware.sender.", "hardware.broker.", "hardware.compression.",
                 "hardware.consumer.")


def keys_in(section: str) -> list[str]:
    return [k for k in FIELDS if section_of(k) == section]


def is_cost(key: str) -> bool:
    return key.startswith(COST_PREFIXES)


def to_text(value: Any) -> str:
    """A resolved value as the text a user would type (Kafka's spelling: 16384, 5, true)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return fmt(value)
    return str(value)


def widget_value(key: str, value: Any) -> Any:
    """A resolved value in the form the field's widget holds."""
    f = FIELDS[key]
    if f.kind is bool:
        return bool(value)
    if isinstance(f.kind, tuple):
        return to_text(value)
    return to_text(value)


def from_widget(key: str, value: Any) -> Any:
    """A widget's value as raw scenario input: from_flat validates it; blank text means "the default"."""
    if isinstance(value, str):
        value = value.strip()
        return None if value == "" else value
    return value


def default_note(key: str, library: str | None, version: str | None) -> str:
    f = FIELDS[key]
    if key.startswith("producer.") and f.default is None:
        try:
            default = clients.producer_defaults(library or "java", version or "4.3")[key[len("producer."):]]
        except ValueError:
            return "Default: the client version's default."
        return f"Default for {library} {version}: {to_text(default)}. Leave blank for the default."
    if key.startswith("hardware."):
        return "Default: the hardware profile's value."
    return f"Default: {to_text(f.default)}." if f.default not in (None, "") else ""


def help_text(key: str, library: str | None, version: str | None) -> str:
    f = FIELDS[key]
    return f"`{key}` — {f.doc} {default_note(key, library, version)} Allowed: {f.allowed()}."


def field_widget(key: str, library: str | None, version: str | None, on_change: Callable[[str], None],
                 prefix: str = "xf") -> None:
    """One widget for one field; its value lives in st.session_state[widget_key(key)] (set by the caller)."""
    f = FIELDS[key]
    wkey = widget_key(key, prefix)
    common = dict(key=wkey, help=help_text(key, library, version), on_change=on_change, args=(key,))
    label = kafka_name(key)
    if f.kind is bool:
        st.checkbox(label, **common)
    elif isinstance(f.kind, tuple):
        options = list(f.kind)
        if st.session_state.get(wkey) not in options:
            st.session_state[wkey] = options[0]
        st.selectbox(label, options, **common)
    else:
        st.text_input(label, **common)
