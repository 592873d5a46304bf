"""Test-only Harbor environment: a trial's commands run as host processes in a per-trial folder.

There is no Docker daemon on CI, so Harbor gets this class by import path
(`--env tests.harbor.host_environment:HostProcessEnvironment`) and runs its own job, trial,
log-collection and verifier code against it. The folder `<trial>/host-root/` stands in for the
container's file system: container paths under the roots below (`/logs/agent`, `/tests`,
`/opt/premath`, ...) are rewritten to it, in commands and in uploads and downloads, so the
adapter takes the same code path as in a container. Processes see only the variables Harbor
gives them (plus PATH and HOME), never the test runner's, as in a container.
"""

import asyncio
import contextlib
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

from tests.support.processes import descendants

CONTAINER_ROOTS = ("logs", "tests", "solution", "installed-agent", "opt", "app")
_CONTAINER_PATH = re.compile(
    r"(?<![\w.~/-])/(" + "|".join(map(re.escape, CONTAINER_ROOTS)) + r")\b"
)


class HostProcessEnvironment(BaseEnvironment):
    """Runs each `exec` as `bash -c` on the host, in a process group killed on cancellation."""

    def __init__(
        self,
        *args: Any,
        path: str | None = None,
        variables: dict[str, str] | None = None,
        prebaked: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        """`--ek` options: `path` is PATH inside the "image" (default: the host's);
        `variables` are set in every process, as an image's ENV; `prebaked` links container
        paths to host folders at start, as files baked into an image."""
        super().__init__(*args, **kwargs)
        self.root = (self.trial_paths.trial_dir / "host-root").resolve()
        self.search_path = path or os.environ.get("PATH", "/usr/bin:/bin")
        self.variables = dict(variables or {})
        self.prebaked = dict(prebaked or {})

    @staticmethod
    def type() -> str:
        return "host-process"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities()

    def _validate_definition(self) -> None:
        """Nothing to build: the task's environment/ folder is not used."""

    def host_path(self, container_path: str | os.PathLike[str]) -> Path:
        """Where a container path lives on the host (other absolute paths are the host's)."""
        return Path(
            _CONTAINER_PATH.sub(lambda m: f"{self.root}/{m.group(1)}", os.fspath(container_path))
        )

    def translate(self, command: str) -> str:
        return _CONTAINER_PATH.sub(lambda m: f"{self.root}/{m.group(1)}", command)

    @property
    def workdir(self) -> Path:
        return self.host_path(self.task_env_config.workdir or "/app")

    async def start(self, force_build: bool) -> None:
        for folder in ("logs/agent", "logs/verifier", "logs/artifacts", "tmp", "root"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        self.workdir.mkdir(parents=True, exist_ok=True)
        for container_path, host_folder in self.prebaked.items():
            link = self.host_path(container_path)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path(host_folder).resolve(), target_is_directory=True)

    async def stop(self, delete: bool) -> None:
        if delete:
            shutil.rmtree(self.root, ignore_errors=True)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self.host_path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, self.host_path(target_dir), dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.host_path(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        source = self.host_path(source_dir)
        if source.is_dir():
            shutil.copytree(source, target_dir, dirs_exist_ok=True, symlinks=True)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        process_env = {
            "PATH": self.search_path,
            "HOME": str(self.root / "root"),
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            **self.variables,
            **(self._merge_env(env) or {}),
        }
        folder = self.host_path(cwd) if cwd else self.workdir
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            self.translate(command),
            cwd=folder,
            env=process_env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout_sec)
        except BaseException:
            # Cancelled (Harbor's agent timeout) or timed out: the container would be torn down,
            # so every process in it dies at once, with no chance to clean up.
            for pid in [process.pid, *descendants(process.pid)]:  # setsid ones included
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            await process.wait()
            raise
        return ExecResult(
            stdout=stdout.decode("utf-8", errors="replace"),
            stderr=stderr.decode("utf-8", errors="replace"),
            return_code=process.returncode if process.returncode is not None else -1,
        )
