"""A measurement matrix: the configurations of a reference data set, as data (validation/matrices/*.yaml).

    scenario: ../../examples/local-1broker.yaml   # base scenario, relative to the matrix file
    repeat: 3
    warmup_records: 200000
    set: {workload.records: 300000}               # applied to every configuration
    configs:
      - {id: b16k-l0, role: calibration, clients: [java, kafka-python], set: {producer.batch.size: 16384},
         client_set: {kafka-python: {workload.records: 50000}}, warmup_records: 50000}
role is "calibration" (a later fit may use it) or "held-out" (only ever compared against); client_role: {client:
role} splits a configuration differently for one client.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from kafkasim.model.errors import UserError
from kafkasim.validation.measure import Config
from kafkasim.validation.runners import CLIENTS

ROLES = ("calibration", "held-out")


class Matrix:
    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            data = yaml.safe_load(self.path.read_text()) or {}
        except OSError as exc:
            raise UserError(f"--matrix {path}: cannot read it ({exc.strerror})") from None
        except yaml.YAMLError as exc:
            raise UserError(f"--matrix {path}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
        self.repeat = int(data.get("repeat", 3))
        self.warmup_records = int(data.get("warmup_records", 200_000))
        base = self.path.parent / data.get("scenario", "")
        common = _overrides(data.get("set", {}))
        self.configs: list[Config] = []
        seen = set()
        for i, item in enumerate(data.get("configs") or []):
            cid = item.get("id") or f"config-{i + 1}"
            if cid in seen:
                raise UserError(f"--matrix {path}: config id {cid!r} is used twice")
            seen.add(cid)
            role = item.get("role", "held-out")
            if role not in ROLES:
                raise UserError(f"--matrix {path}: config {cid}: role={role!r}; allowed: {', '.join(ROLES)}")
            scenario = self.path.parent / item["scenario"] if "scenario" in item else base
            for client in item.get("clients", ["java"]):
                if client not in CLIENTS:
                    raise UserError(f"--matrix {path}: config {cid}: client {client!r}; allowed: {', '.join(CLIENTS)}")
                per_client = (item.get("client_set") or {}).get(client, {})  # e.g. fewer records for kafka-python
                client_role = (item.get("client_role") or {}).get(client, role)   # a split per client
                if client_role not in ROLES:
                    raise UserError(f"--matrix {path}: config {cid}: client_role {client_role!r}; allowed: "
                                    f"{', '.join(ROLES)}")
                self.configs.append(Config(scenario, client, common + _overrides(item.get("set", {}))
                                           + _overrides(per_client), cid, client_role, item.get("warmup_records")))
        if not self.configs:
            raise UserError(f"--matrix {path}: no configs")


def _overrides(mapping: dict) -> list[str]:
    return [f"{k}={_text(v)}" for k, v in (mapping or {}).items()]


def _text(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
