"""docker-compose.yml is well formed and agrees with the settings (it cannot run here: no Docker engine)."""

from __future__ import annotations

from pathlib import Path

import yaml

from simplemem.infra.settings import InfraSettings
from simplemem.schemas.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_present_with_health_checks() -> None:
    services = compose()["services"]
    assert {
        "kafka",
        "opensearch",
        "milvus",
        "etcd",
        "minio",
        "redis",
        "prometheus",
        "worker",
        "query",
    } <= set(services)
    for name in ("kafka", "opensearch", "milvus", "etcd", "minio", "redis"):
        assert "healthcheck" in services[name], name


def test_environment_names_are_settings() -> None:
    fields = {f"SIMPLEMEM_{name.upper()}" for name in Settings.model_fields}
    for name in ("worker", "query"):
        env = compose()["services"][name]["environment"]
        unknown = set(env) - fields
        assert not unknown, f"{name}: {unknown} are not settings"
        assert env["SIMPLEMEM_MODE"] == "services"


def test_ports_match_the_defaults() -> None:
    s = InfraSettings()
    services = compose()["services"]
    env = services["worker"]["environment"]
    assert env["SIMPLEMEM_OPENSEARCH_URL"].endswith(f":{s.opensearch_port}")
    assert env["SIMPLEMEM_REDIS_URL"] == f"redis://redis:{s.redis_port}/0"
    assert env["SIMPLEMEM_KAFKA_BOOTSTRAP"].endswith(f":{s.kafka_port}")
    assert env["SIMPLEMEM_MILVUS_URI"].endswith(f":{s.milvus_port}")
    published = {p.split(":")[0] for svc in services.values() for p in svc.get("ports", [])}
    assert {"9092", "9200", "19530", "6379"} <= published
    assert (ROOT / "Dockerfile").exists()
    assert (ROOT / services["prometheus"]["volumes"][0].split(":")[0]).exists()


def test_every_simplemem_command_the_compose_file_runs_exists() -> None:
    """Each `simplemem ...` a service runs resolves to a command of the CLI, with its options."""
    import typer.main

    from simplemem.cli.main import app

    group = typer.main.get_command(app)
    runs = [
        svc["command"]
        for svc in compose()["services"].values()
        if svc.get("command", [None])[0] == "simplemem"
    ]
    assert runs, "the compose file runs the service's own command"
    for argv in runs:
        ctx = group.make_context("simplemem", list(argv[1:]), resilient_parsing=True)
        name, command, rest = group.resolve_command(ctx, list(argv[1:]))
        assert command is not None, argv
        command.make_context(name or "", rest, parent=ctx)  # raises on an unknown option
