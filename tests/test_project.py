"""The project's own files: compose, README commands, lint."""

import ast
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


def _is_test_module(name: str) -> bool:
    """A dotted module name naming a test module (pytest's test_*.py and *_test.py)."""
    return any(part.startswith("test_") or part.endswith("_test") for part in name.split("."))


def imported_test_modules(source: str) -> list[str]:
    """The test modules `source` imports, at any depth and in any spelling (`import a.b`,
    `from a import b`, relative, inside a function)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if _is_test_module(module):
                found.append(module)
            else:  # `from tests.graph import test_links`: the names may be modules
                found += [
                    f"{module}.{alias.name}".lstrip(".")
                    for alias in node.names
                    if _is_test_module(alias.name)
                ]
    return found


def _fixtures(tree: ast.Module) -> set[str]:
    """The names of the fixtures a module defines with `@pytest.fixture`."""

    def is_fixture(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return ast.unparse(target) in ("pytest.fixture", "fixture")

    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(is_fixture(d) for d in node.decorator_list)
    }


def fixtures_imported(source: str, fixtures: dict[str, set[str]]) -> list[str]:
    """What `source` imports that is a fixture of one of `fixtures` (module name: its
    fixtures): `module.name` for each."""
    return [
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module in fixtures
        for alias in node.names
        if alias.name in fixtures[node.module]
    ]


def _python_files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_no_test_module_imports_another() -> None:
    # shared data and functions live in tests/helpers/, so each test module is collected
    # once, under one name, and stands on its own
    imports = {
        str(path.relative_to(ROOT)): found
        for path in _python_files("tests", "bench")
        if (found := imported_test_modules(path.read_text()))
    }
    assert imports == {}


def conftests_imported(source: str) -> list[str]:
    """The conftest modules `source` imports from (`from x.conftest import ...`,
    `import x.conftest`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "conftest":
            found.append(node.module or "")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[-1] == "conftest"]
    return found


def test_nothing_imports_a_conftest() -> None:
    # a conftest holds fixtures, which pytest finds itself; what tests share besides them
    # lives in tests/helpers/
    imports = {
        str(path.relative_to(ROOT)): found
        for path in _python_files("tests", "bench", "app")
        if (found := conftests_imported(path.read_text()))
    }
    assert imports == {}
    assert conftests_imported("from tests.api.conftest import gql\nimport tests.conftest\n") == [
        "tests.api.conftest",
        "tests.conftest",
    ]


def test_conftests_define_their_fixtures_rather_than_import_them() -> None:
    # pytest registers an imported fixture again where it is imported (a session fixture
    # then runs once per conftest holding it): a fixture several folders use belongs in their
    # common ancestor's conftest
    fixtures = {
        _module_name(p): _fixtures(ast.parse(p.read_text())) for p in _python_files("tests")
    }
    imported = {
        str(path.relative_to(ROOT)): found
        for path in (ROOT / "tests").rglob("conftest.py")
        if (found := fixtures_imported(path.read_text(), fixtures))
    }
    assert imported == {}


def test_the_import_checks_see_through_spelling() -> None:
    # a package of its own name: these lines are what the checks look for, not imports here
    spelled = """
import suite.api.test_iac
import suite.api.test_iac as iac
from suite.graph.test_links import remote
from suite.graph import (
    states,
    test_links,
)
from .test_parse import BAD_INPUT
from . import test_parse


def later() -> None:
    from suite.test_cli import Cli
"""
    assert imported_test_modules(spelled) == [
        "suite.api.test_iac",
        "suite.api.test_iac",
        "suite.graph.test_links",
        "suite.graph.test_links",
        ".test_parse",
        "test_parse",
        "suite.test_cli",
    ]
    helpers = (
        "from tests.helpers.states import resource\nfrom tests.helpers.waiting import wait_until\n"
    )
    assert imported_test_modules(helpers) == []
    defined = ast.parse(
        "import pytest\n@pytest.fixture(scope='session')\nasync def app(): ...\n"
        "@pytest.fixture\ndef client(app): ...\ndef gql(): ...\n"
    )
    fixtures = {"suite.api.conftest": _fixtures(defined)}
    assert fixtures == {"suite.api.conftest": {"app", "client"}}
    reexport = "from suite.api.conftest import (\n    app,\n    gql,\n)\n"
    assert fixtures_imported(reexport, fixtures) == ["suite.api.conftest.app"]
