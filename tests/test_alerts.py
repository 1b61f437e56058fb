"""simplemem/infra/prometheus/alerts.yml: valid PromQL, only metrics the workers export, the agreed thresholds."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "simplemem" / "infra" / "prometheus" / "alerts.yml"


def rules() -> list[dict]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [r for g in groups for r in g["rules"]]


def exported_names() -> set[str]:
    """Every sample name the worker's registry can produce (counters add _total, histograms _bucket...)."""
    from prometheus_client import REGISTRY

    import simplemem.streams.metrics  # noqa: F401  (registers the worker's metrics)

    names: set[str] = set()
    for family in REGISTRY.collect():
        names.add(family.name)
        names.update(s.name for s in family.samples)
        if family.type == "counter":
            names.add(f"{family.name}_total")
    return names


def test_every_expression_parses_as_promql() -> None:
    import promql_parser

    for rule in rules():
        promql_parser.parse(rule["expr"])  # raises on a syntax error


def test_alerts_use_only_exported_metrics() -> None:
    exported = exported_names()
    for rule in rules():
        used = set(re.findall(r"\bsimplemem_[a-z_]+", rule["expr"]))
        assert used, rule["alert"]
        assert used <= exported, (rule["alert"], used - exported)


def test_the_agreed_alerts_are_there() -> None:
    by_name = {r["alert"]: r for r in rules()}
    assert "> 0.60" in by_name["SimpleMemDiscardRateHigh"]["expr"]
    assert "< 0.05" in by_name["SimpleMemDiscardRateLow"]["expr"]
    assert "simplemem_dead_letters_total" in by_name["SimpleMemDeadLetters"]["expr"]
    assert "deriv(simplemem_consumer_lag" in by_name["SimpleMemConsumerLagGrowing"]["expr"]
    assert "simplemem_store_drift_units" in by_name["SimpleMemStoreDrift"]["expr"]
    for rule in by_name.values():
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]
        assert re.fullmatch(r"\d+m", rule["for"])


def test_prometheus_loads_the_alerts_and_scrapes_the_worker_port() -> None:
    from simplemem.schemas.settings import Settings

    config = yaml.safe_load((ROOT / "simplemem" / "infra" / "prometheus" / "prometheus.yml").read_text())
    assert "/etc/prometheus/alerts.yml" in config["rule_files"]
    worker = next(j for j in config["scrape_configs"] if j["job_name"] == "simplemem-worker")
    assert worker["dns_sd_configs"][0]["port"] == Settings().worker_web_port
