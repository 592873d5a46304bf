"""The report for humans: a plain-text table, and a self-contained HTML page with inline SVG.

The HTML has no external assets (no scripts, fonts or stylesheets from elsewhere) and escapes
every string that came from the experiment, so it can be opened or mailed as one file.
"""

import html
from typing import Any

_BAR_W = 360
_ROW_H = 26


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _interval(interval: dict[str, float] | None, percent: bool) -> str:
    if interval is None:
        return "-"
    show = _pct if percent else _num
    sign = "+" if interval["estimate"] >= 0 else ""
    return f"{sign}{show(interval['estimate'])} [{show(interval['low'])}, {show(interval['high'])}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    return [line.rstrip() for line in lines]


def _objective(variant: dict[str, Any]) -> str:
    objective = variant["objective"]
    return "-" if objective is None else f"{objective['mean']:.4g} ({objective['name']})"


def _variant_cells(variant: dict[str, Any]) -> list[str]:
    """One variant's row, the same in the text table and the HTML page."""
    return [
        variant["variant_id"] + (" (baseline)" if variant["is_baseline"] else ""),
        str(variant["trials"]),
        str(variant["success"]),
        str(variant["failure"]),
        str(variant["error"]),
        _pct(variant["pass_rate"]),
        _objective(variant),
    ]


def report_text(report: dict[str, Any]) -> str:
    trials = report["trials"]
    lines = [
        f"premath experiment report: {report['experiment_name']} ({report['experiment_id']})",
        f"  Run: {report['run_id']}  digest {report['experiment_digest'][:17]}",
        f"  Trials: {trials['final']} of {trials['scheduled']} final, {trials['pending']} pending",
        "",
    ]
    rows = [_variant_cells(variant) for variant in report["variants"]]
    lines += _table(
        ["variant", "trials", "success", "failure", "error", "pass rate", "objective mean"], rows
    )
    errors = [
        f"  {v['variant_id']}: " + ", ".join(f"{k} {n}" for k, n in v["errors_by_class"].items())
        for v in report["variants"]
        if v["errors_by_class"]
    ]
    if errors:
        lines += ["", "errors by class:", *errors]
    comparisons = report["comparisons"]
    if comparisons:
        bootstrap = report["bootstrap"]
        lines += [
            "",
            f"against {report['baseline_id']} ({report['design']['comparison']}; "
            f"{bootstrap['confidence'] * 100:g}% bootstrap CI, {bootstrap['resamples']} "
            f"resamples, seed {bootstrap['seed']}):",
        ]
        rows = []
        for c in comparisons:
            wlt = "-" if c["wins"] is None else f"{c['wins']}/{c['losses']}/{c['ties']}"
            test = c["mcnemar"]["method"] if c["mcnemar"] else "fisher"
            rows.append(
                [
                    c["variant_id"],
                    "-" if c["pairs"] is None else str(c["pairs"]),
                    wlt,
                    f"{_p(c['p_value'])} ({test})",
                    _p(c["p_holm"]),
                    _interval(c["success_diff"], percent=True),
                    _interval(c["objective_diff"], percent=False),
                    "-" if c["cohens_h"] is None else f"{c['cohens_h']:+.2f} {c['magnitude']}",
                ]
            )
        lines += _table(
            ["variant", "pairs", "W/L/T", "p", "p holm", "d success", "d objective", "cohen h"],
            rows,
        )
    return "\n".join(lines)


def _svg_comparison(comparison: dict[str, Any], variants: dict[str, dict[str, Any]]) -> str:
    """Pass-rate bars for baseline and treatment, then the success difference with its CI."""
    names = [comparison["baseline_id"], comparison["variant_id"]]
    label_w, height = 150, _ROW_H * 3 + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + _BAR_W + 190}" '
        f'height="{height}" role="img" aria-label="pass rates and difference">'
    ]
    for row, name in enumerate(names):
        rate = variants[name]["pass_rate"]
        y = 10 + row * _ROW_H
        width = 0 if rate is None else round(rate * _BAR_W)
        fill = "#8a8f98" if row == 0 else "#2f6fdb"
        parts.append(
            f'<text x="0" y="{y + 15}" font-size="12">{html.escape(name)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{_BAR_W}" height="18" fill="#eef0f3"/>'
            f'<rect x="{label_w}" y="{y}" width="{width}" height="18" fill="{fill}"/>'
            f'<text x="{label_w + _BAR_W + 6}" y="{y + 14}" font-size="12">{_pct(rate)}</text>'
        )
    diff = comparison["success_diff"]
    y = 10 + 2 * _ROW_H + 8
    mid = label_w + _BAR_W / 2
    parts.append(
        f'<text x="0" y="{y + 15}" font-size="12">difference</text>'
        f'<line x1="{mid}" y1="{y - 4}" x2="{mid}" y2="{y + 24}" stroke="#444" '
        f'stroke-dasharray="3,3"/>'
    )
    if diff is not None:

        def x(value: float) -> float:
            return mid + value * _BAR_W / 2

        parts.append(
            f'<line x1="{x(diff["low"]):.1f}" y1="{y + 10}" x2="{x(diff["high"]):.1f}" '
            f'y2="{y + 10}" stroke="#d9480f" stroke-width="3"/>'
            f'<circle cx="{x(diff["estimate"]):.1f}" cy="{y + 10}" r="5" fill="#d9480f"/>'
            f'<text x="{label_w + _BAR_W + 6}" y="{y + 14}" font-size="12">'
            f"{html.escape(_interval(diff, percent=True))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def report_html(report: dict[str, Any]) -> str:
    esc = html.escape
    variants = {v["variant_id"]: v for v in report["variants"]}
    variant_rows = "".join(
        "<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in _variant_cells(v)) + "</tr>"
        for v in report["variants"]
    )
    sections = []
    for c in report["comparisons"]:
        facts = [
            ("pairs", "-" if c["pairs"] is None else str(c["pairs"])),
            (
                "wins / losses / ties",
                "-" if c["wins"] is None else f"{c['wins']} / {c['losses']} / {c['ties']}",
            ),
            ("p", _p(c["p_value"])),
            ("p (Holm)", _p(c["p_holm"])),
            ("difference in success", _interval(c["success_diff"], percent=True)),
            ("difference in objective", _interval(c["objective_diff"], percent=False)),
            (
                "Cohen's h",
                "-" if c["cohens_h"] is None else f"{c['cohens_h']:+.2f} ({c['magnitude']})",
            ),
        ]
        items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
        sections.append(
            f"<section><h2>{esc(c['variant_id'])} vs {esc(c['baseline_id'])}</h2>"
            f"{_svg_comparison(c, variants)}<dl>{items}</dl></section>"
        )
    title = f"{report['experiment_name']} ({report['experiment_id']})"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
        "table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dd{margin:0}"
        "section{margin-top:2rem}</style></head><body>"
        f"<h1>{esc(title)}</h1>"
        f"<p>Run {esc(report['run_id'])}; {report['trials']['final']} of "
        f"{report['trials']['scheduled']} trials final. Errors are counted apart from "
        "failures; pass rate = success / (success + failure).</p>"
        "<table><thead><tr><th>variant</th><th>trials</th><th>success</th><th>failure</th>"
        "<th>error</th><th>pass rate</th><th>objective mean</th></tr></thead>"
        f"<tbody>{variant_rows}</tbody></table>" + "".join(sections) + "</body></html>\n"
    )
