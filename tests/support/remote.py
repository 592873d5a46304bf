"""A project as remote workers meet it: a git repository whose issue memory an MCP server over
loopback HTTP serves, a bare repository as the remote the workers clone and push to, bearer
tokens, and the fleet's instruction witness minted by the real pipeline."""

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.mcp.client import REPO_ROOT, HttpServer, new_token, start_http_server

POLICY_CI = REPO_ROOT / "policies" / "instruction" / "policy-ci-v1.json"
FLEET_CLAIMS = [
    "capabilities.change_morphisms",
    "capabilities.change_morphisms.issue_claim_next",
    "capabilities.change_morphisms.issue_lease_renew",
    "capabilities.change_morphisms.issue_lease_release",
    "capabilities.change_morphisms.issue_lease_finish",
    "capabilities.change_morphisms.harness_trajectory_append",
]
INTEGRATION = "premath/integration"
WRITE_OUT = "mkdir -p out && echo done > out/$PREMATH_ISSUE_ID"
"""Trivial work: the file each issue's verification looks for."""


def git(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0 or not check, done.stderr
    return done


def issue_row(issue_id: str, verification: str, **fields: Any) -> dict[str, Any]:
    """An open issue whose description names its verification (D16-1)."""
    stamp = "2026-03-01T10:00:00Z"
    return {
        "id": issue_id,
        "title": f"task {issue_id}",
        "description": (
            f"Do {issue_id}.\n\nAcceptance:\n- done\n\nVerification:\n- `{verification}`"
        ),
        "status": "open",
        "priority": 2,
        "issue_type": "task",
        "created_at": stamp,
        "updated_at": stamp,
        "ephemeral": False,
        **fields,
    }


def out_check(issue_id: str) -> str:
    return f"sh -c 'test -f out/{issue_id}'"


@dataclass
class Project:
    root: Path
    """The server's repository (its `.premath/issues.jsonl` is the authority)."""
    remote: Path
    """The bare repository workers clone and push to."""
    tokens: Path

    @property
    def issues(self) -> dict[str, dict[str, Any]]:
        lines = (self.root / ".premath" / "issues.jsonl").read_bytes().splitlines()
        return {row["id"]: row for row in map(orjson.loads, lines) if row}

    def trajectory_rows(self) -> list[dict[str, Any]]:
        """The authority's trajectory, where remote workers' rows land, as its readers see it:
        whole rows only. A last line without its newline is a row the server is writing (a
        reader may see part of one that spans pages) or was killed writing, not a row."""
        path = self.root / ".premath" / "harness_trajectory.jsonl"
        data = path.read_bytes() if path.exists() else b""
        whole = data[: data.rfind(b"\n") + 1].splitlines()
        return [orjson.loads(line) for line in whole if line.strip()]

    def refs(self) -> dict[str, str]:
        """Every branch of the remote: name -> commit."""
        listed = git("for-each-ref", "--format=%(refname:short) %(objectname)", cwd=self.remote)
        return dict(line.split() for line in listed.stdout.splitlines())

    def branches(self) -> dict[str, str]:
        """The issues' delivered branches (the merge queue's integration branch left out)."""
        return {
            name: sha
            for name, sha in self.refs().items()
            if name.startswith("premath/") and name != INTEGRATION
        }

    def integration(self) -> str | None:
        """The integration branch's head, None before anything landed."""
        return self.refs().get(INTEGRATION)

    def landed_witness(self, issue_id: str) -> tuple[str, list[str]]:
        """A closed issue's witness refs as the queue leaves them: its integration commit, and
        the rest (its delivered branch)."""
        refs = self.issues[issue_id]["metadata"]["premathWitnessRefs"]
        landed = [ref for ref in refs if ref.startswith(f"git://{INTEGRATION}@")]
        assert len(landed) == 1, refs
        return landed[0].rpartition("@")[2], [ref for ref in refs if ref != landed[0]]

    def verify_branch(self, issue_id: str, into: Path) -> subprocess.CompletedProcess[str]:
        """Clone the issue's delivered branch and run its verification there."""
        shutil.rmtree(into, ignore_errors=True)
        git(
            "clone",
            "-q",
            "--branch",
            f"premath/{issue_id}",
            str(self.remote),
            str(into),
            cwd=self.root,
        )
        command = self.issues[issue_id]["description"].split("`")[-2]
        return subprocess.run(
            command, shell=True, cwd=into, capture_output=True, text=True, check=False
        )


def make_project(
    folder: Path, rows: Sequence[dict[str, Any]], *, tokens: dict[str, str]
) -> Project:
    root, remote = folder / "project", folder / "remote.git"
    (root / ".premath").mkdir(parents=True)
    (root / ".premath" / "issues.jsonl").write_bytes(
        b"".join(orjson.dumps(row) + b"\n" for row in rows)
    )
    (root / "policies" / "instruction").mkdir(parents=True)
    shutil.copy(POLICY_CI, root / "policies" / "instruction" / POLICY_CI.name)
    (root / "README").write_text("project\n")
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    git("clone", "-q", "--bare", str(root), str(remote), cwd=folder)
    token_path = folder / "tokens"
    token_path.write_text("".join(f"{name} {token}\n" for name, token in tokens.items()))
    token_path.chmod(0o600)
    return Project(root, remote, token_path)


def fleet_tokens(*names: str) -> dict[str, str]:
    return {name: new_token() for name in names}


def mint_fleet_witness(project: Project, name: str = "fleet", **envelope: Any) -> str:
    """Run the instruction pipeline on the server's host for the fleet's authorisation
    (specs/remote-workers.md "Authorisation"); its instruction id."""
    instruction_id = f"20260301T000000Z-{name}"
    document = {
        "schema": 1,
        "intent": "Let the harness fleet claim, renew, release and finish issues",
        "scope": {"kind": "repo", "target": "project"},
        "instructionType": "ci.gate.check",
        "typingPolicy": {"allowUnknown": False},
        "normalizerId": "normalizer.ci.v1",
        "policyDigest": "pol1_4ba916ce38da5c5607eb7f41d963294b34b644deb1fa6d55e133b072ca001b39",
        "requestedChecks": ["ci-wiring-check"],
        "capabilityClaims": FLEET_CLAIMS,
        **envelope,
    }
    path = project.root / "instructions" / f"{instruction_id}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    done = subprocess.run(
        [sys.executable, "-m", "premath", "instruction-run", "--instruction", str(path),
         "--check-command", "true", "--json"],
        cwd=project.root, capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return instruction_id


@contextmanager
def mcp_server(project: Project, *options: str) -> Iterator[HttpServer]:
    server = start_http_server(project.root, "--token-file", str(project.tokens), *options)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(timeout=30)


def worker_argv(url: str, project: Project, worker_id: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "premath", "harness-loop", "worker",
        "--worker-id", worker_id, "--mcp-url", url, "--token-file", str(project.tokens),
        *extra, "--json",
    ]  # fmt: skip


def run_worker(
    url: str, project: Project, worker_id: str, *extra: str, timeout: float = 240
) -> tuple[int, dict[str, Any], str]:
    """A remote worker as a real process: (exit code, its JSON document, stderr)."""
    done = subprocess.run(
        worker_argv(url, project, worker_id, *extra),
        cwd=project.root.parent,
        capture_output=True,
        check=False,
        timeout=timeout,
    )
    return done.returncode, orjson.loads(done.stdout or b"{}"), done.stderr.decode()


def wait_for(
    condition: Any, within_s: float, what: str, *, details: Callable[[], str] | None = None
) -> Any:
    """Poll `condition()` until it is truthy (its value), or fail naming `what` (and what
    `details()` tells then, such as a process's stderr)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    told = f"; {details()}" if details is not None else ""
    raise AssertionError(f"timed out after {within_s} s waiting for {what}{told}")
