"""`premath harness-kpi`: the multithread throughput KPI over the harness trajectory."""

from __future__ import annotations

import click

from premath.cli._options import json_option, project_path_option
from premath.cli._root import AppContext, Reply, StrictCommand, pass_app
from premath.models.vocabulary import DEFAULT_ISSUES_PATH


@click.command("harness-kpi", cls=StrictCommand)
@project_path_option(
    "--trajectory-path",
    "--path",
    "trajectory_path",
    default=".premath/harness_trajectory.jsonl",
    help_text="Trajectory JSONL the KPI is computed from",
)
@project_path_option(
    "--session-path",
    "session_path",
    default=".premath/harness_session.json",
    help_text="Session handoff path (only echoed in the report)",
)
@project_path_option(
    "--issues-path",
    "--issues",
    "issues_path",
    default=DEFAULT_ISSUES_PATH,
    help_text="Issues JSONL path (only echoed in the report)",
)
@click.option(
    "--window-hours", type=int, default=24, show_default=True, help="Lookback window in hours"
)
@click.option(
    "--target-kpi", type=float, default=0.8, show_default=True, help="Target KPI threshold"
)
@click.option(
    "--rollback-kpi", type=float, default=0.4, show_default=True, help="Rollback KPI threshold"
)
@click.option(
    "--min-sample-rows",
    type=int,
    default=3,
    show_default=True,
    help="Minimum window rows before threshold decisions",
)
@json_option
@pass_app
def harness_kpi(
    app: AppContext,
    trajectory_path: str,
    session_path: str,
    issues_path: str,
    window_hours: int,
    target_kpi: float,
    rollback_kpi: float,
    min_sample_rows: int,
) -> Reply:
    """Compute the throughput KPI from the trajectory. Issues closed per worker per day, times
    the share of steps that passed (specs/kpi.md).

    \b
    premath harness-kpi --window-hours 24 --json
    """
    from premath.record.kpi import kpi_report, kpi_text

    report = kpi_report(
        trajectory_path=trajectory_path,
        session_path=session_path,
        issues_path=issues_path,
        window_hours=window_hours,
        target_kpi=target_kpi,
        rollback_kpi=rollback_kpi,
        min_sample_rows=min_sample_rows,
        now=app.clock.now(),
    )
    return Reply(report, text=kpi_text)
