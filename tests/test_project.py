"""The project's own files: compose, README commands, lint."""

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_runs_postgres_16_and_the_server() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"] == "postgres:16"
    assert "DATABASE_URL" in services["infragraph"]["environment"]
    assert (ROOT / "Dockerfile").is_file()


def test_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    head = readme[: readme.index("## ")]
    assert "uv run infragraph serve" in head
    assert "uv run pytest" in head


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "uv run pytest" in ci
    # as a fresh clone runs it too: no DATABASE_URL, no XDG_RUNTIME_DIR
    assert "env -u DATABASE_URL -u XDG_RUNTIME_DIR uv run pytest" in ci


def test_code_is_ruff_clean() -> None:
    result = subprocess.run(
        ["ruff", "check", "app", "tests", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
