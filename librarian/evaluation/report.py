"""Rendering of an eval report (a plain dict): a readable table, JSON, or one self-contained HTML file.

A report has a `title`, a `summary` (key -> value), and `tables`: each `{name, columns, rows, chart?}`
where rows are lists in column order and `chart` names the numeric column drawn as bars (inline SVG,
so the HTML needs no network and no script). A report may also carry a `verdict` (`{status, message}`,
shown first: the gate's pass or fail), and a table a `flag` column whose `REGRESSED` / `improved`
cells mark their row (red / green, and the word itself, so colour is never the only signal).
"""

from __future__ import annotations

import html
import json
from typing import Any


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 10 else f"{value:.1f}"
    return "" if value is None else str(value)


def to_text(report: dict[str, Any]) -> str:
    lines = [report["title"]]
    if report.get("verdict"):
        lines.append(f"  verdict: {report['verdict']['status'].upper()}: {report['verdict']['message']}")
    lines += [f"  {k}: {_cell(v)}" for k, v in report.get("summary", {}).items()]
    for table in report.get("tables", []):
        cells = [[_cell(v) for v in row] for row in table["rows"]]
        widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(table["columns"])]
        lines += ["", table["name"]]
        header = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(table["columns"], widths, strict=True))
        ]
        lines.append("  ".join(header))
        for row in cells:
            lines.append(
                "  ".join(
                    v.ljust(w) if i == 0 else v.rjust(w)
                    for i, (v, w) in enumerate(zip(row, widths, strict=True))
                )
            )
        if table.get("note"):
            lines.append(table["note"])
    return "\n".join(lines)


_ROW_CLASS = {"REGRESSED": "bad", "improved": "good"}


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False, default=str)


def _bars(table: dict[str, Any]) -> str:
    """Horizontal bars of the chart column, labelled by the first column; scale 0 to the maximum."""
    column = table["columns"].index(table["chart"])
    points = [(str(r[0]), float(r[column])) for r in table["rows"] if isinstance(r[column], int | float)]
    if not points:
        return ""
    top = max(v for _, v in points) or 1.0
    label_w, bar_w, row_h = 300, 360, 24
    height = row_h * len(points) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 80}" height="{height}" '
        f'role="img" aria-label="{html.escape(table["chart"])} by {html.escape(table["columns"][0])}">'
    ]
    for i, (label, value) in enumerate(points):
        y = 5 + i * row_h
        width = max(1.0, bar_w * value / top)
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" font-size="13">'
            f"{html.escape(label)}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{row_h - 8}" fill="#3b6ea5"/>'
            f'<text x="{label_w + width + 6:.1f}" y="{y + 16}" font-size="12">{value:.4f}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def to_html(report: dict[str, Any]) -> str:
    """One HTML file with inline CSS and SVG: open it anywhere, offline."""
    title = html.escape(report["title"])
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{title}</title><style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}}"
        "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem}"
        "td.n{text-align:right;font-variant-numeric:tabular-nums}dt{font-weight:600}"
        "tr.bad{background:#fde2e1}tr.good{background:#e3f6e5}p.verdict{font-size:1.2rem;font-weight:600}"
        ".fail{color:#a4161a}.pass{color:#1b6e2a}</style></head><body>",
        f"<h1>{title}</h1>",
    ]
    if report.get("verdict"):
        status = str(report["verdict"]["status"])
        out.append(
            f"<p class='verdict {html.escape(status)}'>{html.escape(status.upper())}: "
            f"{html.escape(str(report['verdict']['message']))}</p>"
        )
    out.append("<dl>")
    for key, value in report.get("summary", {}).items():
        out.append(f"<dt>{html.escape(str(key))}</dt><dd>{html.escape(_cell(value))}</dd>")
    out.append("</dl>")
    for table in report.get("tables", []):
        out.append(f"<h2>{html.escape(table['name'])}</h2>")
        if table.get("chart"):
            out.append(_bars(table))
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in table["columns"]) + "</tr>")
        flag = table["columns"].index(table["flag"]) if table.get("flag") in table["columns"] else None
        for row in table["rows"]:
            mark = _ROW_CLASS.get(str(row[flag])) if flag is not None else None
            cells = "".join(
                f"<td class='n'>{html.escape(_cell(v))}</td>"
                if isinstance(v, int | float)
                else f"<td>{html.escape(_cell(v))}</td>"
                for v in row
            )
            out.append(f"<tr class='{mark}'>{cells}</tr>" if mark else f"<tr>{cells}</tr>")
        out.append("</table>")
        if table.get("note"):
            out.append(f"<p>{html.escape(table['note'])}</p>")
    out.append("</body></html>")
    return "\n".join(out)
