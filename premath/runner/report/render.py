"""The report for humans: plain text, and a self-contained HTML page with inline SVG plots.

Both render the same cells from the same helpers, so their numbers agree. The HTML has no
external assets (no scripts, fonts or stylesheets from elsewhere) and escapes every string that
came from the experiment, so it can be opened or mailed as one file; its only links are
relative ones to the run's trial folders.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from premath.terminal import counted, fit_table, terminal_width, wrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MISSING = "\u2013"  # an en dash
"""What a value without data shows (no judged trial, no pair, no test)."""

_TEST_NAMES = {
    ("sign", "exact"): "exact sign test (McNemar)",
    ("sign", "chi2_cc"): "sign test, chi-square cc (McNemar)",
    ("fisher", "exact"): "Fisher exact",
    ("mann_whitney", "normal_cc"): "Mann-Whitney U",
}


def _pct(value: float | None) -> str:
    return MISSING if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return MISSING
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _interval(interval: dict[str, float] | None, percent: bool) -> str:
    if interval is None:
        return MISSING
    show = _pct if percent else _num
    sign = "+" if interval["estimate"] >= 0 else ""
    return f"{sign}{show(interval['estimate'])} [{show(interval['low'])}, {show(interval['high'])}]"


def _objective(variant: dict[str, Any]) -> str:
    objective = variant["objective"]
    return MISSING if objective is None else f"{objective['mean']:.4g} ({objective['name']})"


def _task_rate(variant: dict[str, Any]) -> str:
    ci = variant["task_pass_rate_ci"]
    if ci is None:
        return MISSING
    return f"{_pct(variant['task_pass_rate'])} [{_pct(ci['low'])}, {_pct(ci['high'])}]"


VARIANT_HEADER = [
    "variant",
    "trials",
    "success",
    "failure",
    "error",
    "pass rate",
    "tasks",
    "task pass rate [Wilson CI]",
    "objective mean",
]


def _variant_cells(variant: dict[str, Any]) -> list[str]:
    """One variant's row, the same in the text table and the HTML page."""
    return [
        variant["variant_id"] + (" (baseline)" if variant["is_baseline"] else ""),
        str(variant["trials"]),
        str(variant["success"]),
        str(variant["failure"]),
        str(variant["error"]),
        _pct(variant["pass_rate"]),
        str(variant["tasks"]),
        _task_rate(variant),
        _objective(variant),
    ]


COMPARISON_HEADER = [
    "variant",
    "tasks",
    "trials",
    "W/L/T",
    "test",
    "p",
    "p holm",
    "d success",
    "d objective",
    "cohen h",
]


def _test_name(comparison: dict[str, Any]) -> str:
    test = comparison["test"]
    return MISSING if test is None else _TEST_NAMES[(test["name"], test["method"])]


def _comparison_cells(c: dict[str, Any]) -> list[str]:
    """One comparison's row, the same in the text table and the HTML page."""
    return [
        c["variant_id"],
        MISSING if c["tasks"] is None else str(c["tasks"]),
        str(c["trials"]),
        MISSING if not c["tasks"] else f"{c['wins']}/{c['losses']}/{c['ties']}",
        _test_name(c),
        _p(c["p_value"]),
        _p(c["p_holm"]),
        _interval(c["success_diff"], percent=True),
        _interval(c["objective_diff"], percent=False),
        MISSING if c["cohens_h"] is None else f"{c['cohens_h']:+.2f} {c['magnitude']}",
    ]


def _metadata_items(report: dict[str, Any]) -> list[tuple[str, str]]:
    meta, trials = report["metadata"], report["trials"]
    return [
        ("experiment", f"{report['experiment_id']} ({report['experiment_digest'][:17]})"),
        ("run", report["run_id"]),
        ("commit", meta["commit"] or MISSING),
        ("seed", str(meta["seed"])),
        ("schedule", meta["scheduling"]),
        ("executor", meta["executor"]),
        ("started", meta["started_at"] or MISSING),
        (
            "finished",
            meta["finished_at"]
            or f"not yet ({counted(trials['pending'], 'trial')} pending: premath experiment "
            f"resume {report['run_id']})",
        ),
        (
            "trials",
            f"{trials['final']} of {trials['scheduled']} final, {trials['pending']} pending "
            f"({counted(report['tasks'], 'task')} x "
            f"{counted(report['design']['replications'], 'replication')})",
        ),
    ]


def _error_rows(report: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [
        (v["variant_id"], error_class, count)
        for v in report["variants"]
        for error_class, count in v["errors_by_class"].items()
    ]


def _cell_text(cell: dict[str, Any]) -> str:
    judged = cell["success"] + cell["failure"]
    text = f"{cell['success']}/{judged}" if judged else MISSING
    if cell["error"]:
        text += f" +{cell['error']} err"
    if cell["versus_baseline"]:
        text += f" {cell['versus_baseline']}"
    return text


def report_text(report: dict[str, Any], width: int | None = None) -> str:
    """The report for a terminal of `width` columns (default: this one's; 80 when piped):
    paragraphs wrapped, tables split by columns or stacked so that no line is wider."""
    width = terminal_width() if width is None else width

    def para(text: str, indent: str = "", hang: str = "  ") -> list[str]:
        return wrap(text, width, indent=indent, hang=hang)

    lines = para(
        f"premath experiment report: {report['experiment_name']} ({report['experiment_id']})"
    )
    for name, value in _metadata_items(report):
        lines += para(f"{name}: {value}", indent="  ")
    trials = report["trials"]
    if trials["final"] and not any(v["success"] + v["failure"] for v in report["variants"]):
        lines += ["", *para("no trial was judged: every trial ended in error (why: below)")]
    variants = [_variant_cells(v) for v in report["variants"]]
    lines += ["", *fit_table(VARIANT_HEADER, variants, width)]
    errors = _error_rows(report)
    if errors:
        lines += ["", "errors by class:"]
        for variant, error_class, count in errors:
            lines += para(f"{variant}: {error_class} {count}", indent="  ")
        lines += ["", "most common errors (the harness's first line on stderr):"]
        for error in report["error_messages"]:
            text = f"{error['count']} x {error['error_class']}: {error['message']}"
            lines += para(text, indent="  ")
    comparisons = report["comparisons"]
    if comparisons:
        bootstrap = report["bootstrap"]
        lines += [
            "",
            *para(
                f"against {report['baseline_id']} ({report['design']['comparison']}, per task; "
                f"{bootstrap['confidence'] * 100:g}% bootstrap CI, {bootstrap['resamples']} "
                f"resamples, seed {bootstrap['seed']}):"
            ),
        ]
        lines += fit_table(COMPARISON_HEADER, [_comparison_cells(c) for c in comparisons], width)
    grid = report["grid"]
    if grid:
        names = [cell["variant_id"] for cell in grid[0]["cells"]]
        rows = [[row["task_id"], *(_cell_text(cell) for cell in row["cells"])] for row in grid]
        lines += [
            "",
            *para("tasks (success/judged per variant; win/loss/tie against the baseline):"),
        ]
        lines += fit_table(["task", *names], rows, width)
    lines += ["", *para(f"method: {report['method']}")]
    if report.get("html_path"):
        lines += ["", *para(f"HTML report written to {report['html_path']}")]
    return "\n".join(lines)


_LABEL_W = 170
_PLOT_W = 420
_ROW_H = 28
_AXIS_H = 44
_ORANGE = "#c2410c"
_BLUE = "#1d4ed8"

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:1100px}"
    "h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}"
    "table{border-collapse:collapse;font-size:.9rem}"
    "td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dd{margin:0}"
    "p.method{font-size:.85rem;color:#57606a;max-width:900px}"
    "td.win{background:#dcfce7}td.loss{background:#fee2e2}td.tie{background:#f3f4f6}"
    "td.cell a{margin-right:4px;font-size:.8rem}.legend span{padding:2px 8px;margin-right:6px}"
    "svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#1f2328}"
)


def _svg_axis(left: float, width: float, top: float, ticks: list[float], label: str) -> str:
    """An x axis below the plot: line, ticks with percent labels, and the axis title."""
    low, high = ticks[0], ticks[-1]
    signed = "+" if low < 0 else ""  # a difference axis: -100% .. 0% .. +100%
    parts = [f'<line x1="{left}" y1="{top}" x2="{left + width}" y2="{top}" stroke="#57606a"/>']
    for tick in ticks:
        x = left + (tick - low) / (high - low) * width
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + 5}" stroke="#57606a"/>'
            f'<text x="{x:.1f}" y="{top + 18}" text-anchor="middle">'
            f"{'0' if tick == 0 else format(tick * 100, signed + '.0f')}%</text>"
        )
    parts.append(
        f'<text x="{left + width / 2}" y="{top + 36}" text-anchor="middle">{html.escape(label)}'
        "</text>"
    )
    return "".join(parts)


def _svg_intervals(
    rows: list[tuple[str, float | None, float | None, float | None]],
    *,
    signed: bool,
    low: float,
    high: float,
    axis_label: str,
    aria: str,
    plot_id: str,
) -> str:
    """A dot-and-whisker plot: one row per (label, estimate, ci low, ci high) on an x axis."""
    ticks = [low + (high - low) * i / 4 for i in range(5)]
    height = len(rows) * _ROW_H + _AXIS_H + 10
    width = _LABEL_W + _PLOT_W + 210

    def x(value: float) -> float:
        return _LABEL_W + (value - low) / (high - low) * _PLOT_W

    parts = [
        f'<svg id="{plot_id}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="{html.escape(aria)}">'
    ]
    for tick in ticks:
        zero = tick == 0 and low < 0  # the no-difference line stands out
        style = 'stroke="#57606a" stroke-dasharray="4,3"' if zero else 'stroke="#e5e7eb"'
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="4" x2="{x(tick):.1f}" y2="{len(rows) * _ROW_H + 6}" '
            f"{style}/>"
        )
    for index, (label, estimate, ci_low, ci_high) in enumerate(rows):
        y = 6 + index * _ROW_H + _ROW_H / 2
        parts.append(
            f'<text x="{_LABEL_W - 8}" y="{y + 4}" text-anchor="end">{html.escape(label)}</text>'
        )
        if estimate is None or ci_low is None or ci_high is None:
            parts.append(
                f'<text x="{_LABEL_W + 6}" y="{y + 4}" fill="#57606a">no data ({MISSING})</text>'
            )
            continue
        parts.append(
            f'<line x1="{x(ci_low):.1f}" y1="{y}" x2="{x(ci_high):.1f}" y2="{y}" '
            f'stroke="{_BLUE}" stroke-width="2.5"/>'
            f'<line x1="{x(ci_low):.1f}" y1="{y - 6}" x2="{x(ci_low):.1f}" y2="{y + 6}" '
            f'stroke="{_BLUE}" stroke-width="2"/>'
            f'<line x1="{x(ci_high):.1f}" y1="{y - 6}" x2="{x(ci_high):.1f}" y2="{y + 6}" '
            f'stroke="{_BLUE}" stroke-width="2"/>'
            f'<circle cx="{x(estimate):.1f}" cy="{y}" r="5" fill="{_ORANGE}"/>'
            f'<text x="{_LABEL_W + _PLOT_W + 10}" y="{y + 4}">'
            f"{'+' if signed and estimate >= 0 else ''}{_pct(estimate)} "
            f"[{_pct(ci_low)}, {_pct(ci_high)}]</text>"
        )
    parts.append(_svg_axis(_LABEL_W, _PLOT_W, len(rows) * _ROW_H + 8, ticks, axis_label))
    parts.append("</svg>")
    return "".join(parts)


def _plot_row(
    label: str, estimate: float | None, ci: dict[str, float] | None
) -> tuple[str, float | None, float | None, float | None]:
    return label, estimate, None if ci is None else ci["low"], None if ci is None else ci["high"]


def _pass_rate_plot(report: dict[str, Any]) -> str:
    confidence = report["bootstrap"]["confidence"] * 100
    return _svg_intervals(
        [
            _plot_row(v["variant_id"], v["task_pass_rate"], v["task_pass_rate_ci"])
            for v in report["variants"]
        ],
        signed=False,
        low=0.0,
        high=1.0,
        axis_label=f"pass rate (mean of per-task rates), {confidence:g}% Wilson interval",
        aria="pass rate per variant with Wilson intervals",
        plot_id="pass-rate-plot",
    )


def _difference_plot(report: dict[str, Any]) -> str:
    confidence = report["bootstrap"]["confidence"] * 100
    return _svg_intervals(
        [
            _plot_row(
                f"{c['variant_id']} - {c['baseline_id']}",
                None if c["success_diff"] is None else c["success_diff"]["estimate"],
                c["success_diff"],
            )
            for c in report["comparisons"]
        ],
        signed=True,
        low=-1.0,
        high=1.0,
        axis_label=f"difference in success rate per task, {confidence:g}% bootstrap CI",
        aria="difference in success rate against the baseline",
        plot_id="difference-plot",
    )


def _html_table(header: list[str], rows: list[list[str]], table_id: str) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _trial_href(report: dict[str, Any], trial_id: str, page_dir: Path) -> str:
    folder = Path(report["run_dir"]).absolute() / "trials" / trial_id
    return Path(os.path.relpath(folder, page_dir)).as_posix() + "/"


def _grid_html(report: dict[str, Any], page_dir: Path) -> str:
    grid = report["grid"]
    if not grid:
        return "<p>No tasks.</p>"
    esc = html.escape
    names = [cell["variant_id"] for cell in grid[0]["cells"]]
    head = "<th>task</th>" + "".join(
        f"<th>{esc(name)}{' (baseline)' if name == report['baseline_id'] else ''}</th>"
        for name in names
    )
    body = []
    for row in grid:
        cells = [f"<td>{esc(row['task_id'])}</td>"]
        for cell in row["cells"]:
            verdict = cell["versus_baseline"]
            links = "".join(
                f'<a href="{esc(_trial_href(report, trial["trial_id"], page_dir))}" '
                f'title="{esc(trial["trial_id"])}: {esc(trial["error_class"] or trial["outcome"])}"'
                f">r{trial['replication']}</a>"
                for trial in cell["trials"]
            )
            css = f"cell {verdict}" if verdict else "cell"
            cells.append(f'<td class="{css}">{esc(_cell_text(cell))}<br>{links}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    legend = (
        '<p class="legend"><span style="background:#dcfce7">win</span>'
        '<span style="background:#fee2e2">loss</span>'
        '<span style="background:#f3f4f6">tie</span> against the baseline; a cell shows '
        "success/judged trials, errors apart; r0, r1, ... link to each trial's folder.</p>"
    )
    return (
        f'{legend}<table id="task-grid"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def report_html(report: dict[str, Any], *, page_dir: Path | None = None) -> str:
    """The page; links to trial folders are relative to `page_dir` (default: the cwd)."""
    esc = html.escape
    folder = (page_dir or Path.cwd()).absolute()
    title = f"{report['experiment_name']} ({report['experiment_id']})"
    metadata = "".join(
        f"<dt>{esc(name)}</dt><dd>{esc(value)}</dd>" for name, value in _metadata_items(report)
    )
    sections = [
        f"<h1>{esc(title)}</h1>",
        f'<dl id="run-metadata">{metadata}</dl>',
        "<h2>Pass rate per variant</h2>",
        "<p>Errors are counted apart from failures: pass rate = success / (success + failure).</p>",
        _html_table(
            VARIANT_HEADER, [_variant_cells(v) for v in report["variants"]], "variant-table"
        ),
        _pass_rate_plot(report),
    ]
    if report["comparisons"]:
        bootstrap = report["bootstrap"]
        sections += [
            f"<h2>Against {esc(report['baseline_id'])}</h2>",
            f"<p>{esc(report['design']['comparison'])}, per task; "
            f"{bootstrap['confidence'] * 100:g}% bootstrap CI, {bootstrap['resamples']} "
            f"resamples, seed {bootstrap['seed']}.</p>",
            _html_table(
                COMPARISON_HEADER,
                [_comparison_cells(c) for c in report["comparisons"]],
                "comparison-table",
            ),
            _difference_plot(report),
        ]
    errors = _error_rows(report)
    sections += [
        "<h2>Errors by class</h2>",
        _html_table(
            ["variant", "error class", "trials"],
            [[variant, error_class, str(count)] for variant, error_class, count in errors],
            "error-table",
        )
        if errors
        else '<p id="error-table">No trial ended in error.</p>',
        _html_table(
            ["trials", "error class", "message (the harness's first line on stderr)", "variants"],
            [
                [str(e["count"]), e["error_class"], e["message"], ", ".join(e["variants"])]
                for e in report["error_messages"]
            ],
            "error-messages",
        )
        if report["error_messages"]
        else "",
        "<h2>Tasks</h2>",
        _grid_html(report, folder),
        "<h2>Method</h2>",
        f'<p class="method">{esc(report["method"])}</p>',
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )
