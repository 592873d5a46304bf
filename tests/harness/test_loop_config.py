"""A worker's config groups its fields by concern; every keyword lands in its group."""

import os
from pathlib import Path

import pytest

from premath.errors import InvalidUsage
from premath.harness.authority import LocalAuthority
from premath.harness.loop_config import (
    StepCommands,
    StepLimits,
    WorkerPlace,
    WorkerSettings,
    make_worker_config,
    worker_config,
)
from premath.harness.loop_paths import LoopPaths
from premath.harness.work import ShellWork


def test_make_worker_config_puts_each_keyword_in_its_group(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    cfg = make_worker_config(
        worker_id=" w1 ",
        repo_root=str(tmp_path),
        worktree=str(worktree),
        issues_path="memory/issues.jsonl",
        lock_timeout_s=4.0,
        work_cmd="make fix",
        verify_cmd="make test",
        verify_witness="out/witness.json",
        witness_prefix="worker://mine",
        pass_env=("EXTRA",),
        lease_ttl_s=120,
        command_timeout_s=7.5,
        output_cap=1024,
        backoff_scale=0.5,
        mutation_mode="human-override",
        override_reason="incident 7",
    )
    assert cfg.worker_id == "w1"
    assert cfg.where == WorkerPlace(
        str(worktree), LoopPaths.resolve(str(tmp_path), issues="memory/issues.jsonl")
    )
    assert cfg.commands == StepCommands(
        work_cmd="make fix",
        verify_cmd="make test",
        verify_witness="out/witness.json",
        pass_env=("EXTRA",),
        witness_prefix="worker://mine",
    )
    assert cfg.limits == StepLimits(
        lease_ttl_s=120,
        command_timeout_s=7.5,
        output_cap=1024,
        backoff_scale=0.5,
        lock_timeout_s=4.0,
    )
    assert cfg.limits.renew_every_s == 40.0
    assert cfg.verify_witness_path == os.path.join(str(worktree), "out/witness.json")
    memory = cfg.authority.memory
    assert isinstance(memory, LocalAuthority)
    assert (memory.path, memory.lock_timeout_s) == (str(tmp_path / "memory/issues.jsonl"), 4.0)
    assert (cfg.authority.mutation.mode, cfg.authority.mutation.reason) == (
        "human-override",
        "incident 7",
    )
    assert (cfg.authority.delivery, cfg.authority.presence) == (None, None)
    assert cfg.commands.work == ShellWork("make fix")


def test_an_agent_that_did_the_work_runs_no_work_step(tmp_path: Path) -> None:
    cfg = make_worker_config(
        worker_id="w1", repo_root=str(tmp_path), worktree=str(tmp_path), agent_did_work=True
    )
    assert (cfg.commands.work_cmd, cfg.commands.work_program, cfg.commands.work) == (
        None,
        None,
        None,
    )
    assert cfg.verify_witness_path is None


def test_a_fleet_worker_records_and_claims_in_its_own_home(tmp_path: Path) -> None:
    settings = WorkerSettings(paths=LoopPaths.resolve(str(tmp_path)))
    home = tmp_path / "home"
    home.mkdir()
    cfg = worker_config(
        settings, worker_id="w2", worktree=str(home), paths=LoopPaths.resolve(str(home))
    )
    assert cfg.where.paths.repo_root == str(home)
    memory = cfg.authority.memory
    assert isinstance(memory, LocalAuthority)
    assert memory.path == str(home / ".premath" / "issues.jsonl")


def test_a_missing_worktree_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidUsage, match="worktree is not a directory"):
        make_worker_config(worker_id="w1", repo_root=str(tmp_path), worktree=str(tmp_path / "x"))
