"""Experiment runs under `.premath/runs/` as the dashboard lists them: what ran, how far it got.

A run folder counts once its manifest (`run.json`, written last) exists. Progress is the number
of schedule slots whose last trial row is final, out of the manifest's `trial_count`; a run is
`running` while its `run.lock` marker exists. Each run's rows are read again only when its
`trials.jsonl` changes. Reports are rendered on request (`run_report_html`) from the run folder,
never written: the dashboard only reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from premath.errors import InputInvalid, PremathError
from premath.runner.paths import RunPaths
from premath.store.files import read_bounded
from premath.store.issues_file import FileIdentity, file_identity

Document = dict[str, Any]


def is_run_name(name: str) -> bool:
    """A folder name the dashboard may serve: one plain path part."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


def run_folder(runs_dir: str, run_id: str) -> RunPaths:
    """The run folder `run_id` names, proven to be a direct child of `runs_dir`."""
    if not is_run_name(run_id):
        raise InputInvalid(f"not a run id: {run_id!r}")
    root = Path(runs_dir).resolve()
    folder = root / run_id
    if folder.is_symlink():
        raise InputInvalid(f"no run {run_id!r} under {runs_dir}")
    if folder.parent != root or not (folder / "run.json").is_file():
        raise InputInvalid(f"no run {run_id!r} under {runs_dir}")
    return RunPaths(folder)


def _progress(paths: RunPaths) -> Document:
    from premath.runner.runs import latest_records

    counts = {"success": 0, "failure": 0, "error": 0}
    done = 0
    for record in latest_records(paths).values():
        if record.final:
            done += 1
            counts[record.outcome] += 1
    return {
        "done": done,
        "successCount": counts["success"],
        "failureCount": counts["failure"],
        "errorCount": counts["error"],
    }


@dataclass
class RunsCatalogue:
    """The runs of one runs folder, each re-read only when its files change."""

    runs_dir: str
    _entries: dict[str, tuple[tuple[FileIdentity | None, ...], Document]] = field(
        default_factory=dict
    )

    def runs(self) -> list[Document]:
        try:
            names = sorted(os.listdir(self.runs_dir))
        except OSError:
            self._entries.clear()
            return []
        found = []
        for name in names:
            if not is_run_name(name):
                continue
            paths = RunPaths(Path(self.runs_dir) / name)
            identity = (
                file_identity(os.fspath(paths.manifest)),
                file_identity(os.fspath(paths.trials_log)),
                file_identity(os.fspath(paths.lock)),
            )
            if identity[0] is None:
                continue
            entry = self._entries.get(name)
            if entry is None or entry[0] != identity:
                entry = (identity, self._describe(paths, name))
                self._entries[name] = entry
            found.append(entry[1])
        for gone in set(self._entries) - {run["runId"] for run in found}:
            del self._entries[gone]
        return found

    def _describe(self, paths: RunPaths, name: str) -> Document:
        run: Document = {"runId": name, "running": paths.lock.exists()}
        try:
            manifest = orjson.loads(read_bounded(paths.manifest))
            progress = _progress(paths)
        except (OSError, orjson.JSONDecodeError, PremathError, ValueError) as exc:
            return {**run, "error": f"{type(exc).__name__}: {exc}"}
        if not isinstance(manifest, dict):
            return {**run, "error": "run.json is not a JSON object"}
        total = manifest.get("trial_count")
        return {
            **run,
            "experimentId": manifest.get("experiment_id"),
            "experimentName": manifest.get("experiment_name"),
            "createdAt": manifest.get("created_at"),
            "executor": manifest.get("executor"),
            "total": total if isinstance(total, int) else None,
            **progress,
        }


def run_report_html(runs_dir: str, run_id: str) -> str:
    """The run's HTML report, rendered now; trial links are relative to the run folder."""
    from premath.runner.report.analysis import build_report
    from premath.runner.report.render import report_html
    from premath.runner.runs import open_run

    paths = run_folder(runs_dir, run_id)
    report = build_report(open_run(run_id, os.fspath(paths.root.parent)))
    return report_html(report, page_dir=paths.root)


@dataclass(frozen=True)
class RunEntry:
    """A file of a run folder (its bytes) or a folder (its entry names, folders with `/`)."""

    data: bytes | None = None
    names: tuple[str, ...] = ()


def run_entry(runs_dir: str, run_id: str, inner: str) -> RunEntry:
    """What `<run>/<inner>` holds, proven to stay inside that run folder (symbolic links and
    `..` resolved first); only regular files are read, and at most their cap."""
    root = run_folder(runs_dir, run_id).root.resolve()
    target = (root / inner).resolve()
    if target != root and root not in target.parents:
        raise InputInvalid(f"refusing a path outside the run folder: {inner}")
    if target.is_dir():
        names = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in os.scandir(target))
        return RunEntry(names=tuple(names))
    try:
        return RunEntry(data=read_bounded(target))
    except OSError as exc:
        raise InputInvalid(f"cannot read {inner}: {exc.strerror}") from None
