"""Benchmark record pages, written from ``benchmarks/results/`` at the start of a build.

A record is what a script of ``benchmarks/`` wrote through ``_common.write``: ``<name>.json``
(``environment`` and ``rows``) and ``<name>.md`` (its title, notes and table), or, for a record
kept by hand, the ``.md`` alone. Each gets ``records/<name>.md`` with the notes, a bar chart
of the timing columns of each row (``records/<name>.png``), the full table and the
environment; ``records/index.md`` lists them all.
"""

import io
import json
import math
import re
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sphinx.util import logging

from write_if_changed import write_if_changed

logger = logging.getLogger(__name__)

# Numeric columns that are not times: ratios ("a / b"), rates ("pairs/s"), errors, sizes,
# memory, counts and targets.
_NOT_A_TIME = re.compile(
    r" / |/s\b|\bratio\b|residual|error|efficiency|deviation|\bvs\b|speed-up|gain|\bGB\b"
    r"|\bkB\b|TFLOP|ceiling|injected|x loop|files|^(size|workers|pairs|n|runs)$")
# A unit in a column's name ("warm ms", "first call s (empty store)", "ms/pair", "new us"),
# in a row's "unit" ("device ms", "host us") or in the notes ("microseconds").
_UNIT_WORD = re.compile(r"(?:^|[\s(])(us|ms|s|seconds|microseconds|milliseconds)(?=$|[\s)/,:;.])")
_UNIT_NAMES = {"us": "us", "microseconds": "us", "ms": "ms", "milliseconds": "ms",
               "s": "s", "seconds": "s"}
_MS_PER = {"us": 1e-3, "ms": 1.0, "s": 1e3}
_AXIS_LABELS = {"us": "microseconds", "ms": "milliseconds", "s": "seconds"}


@dataclass(frozen=True)
class Record:
    """One benchmark record, as its files hold it."""

    name: str  # the file name's stem: "fft-small-nvidia-h200"
    title: str  # the benchmark's name, the Markdown file's title: "fft-small"
    notes: str  # the Markdown the script wrote above its table
    columns: tuple  # the table's columns, in the script's order
    rows: tuple  # one dict per row
    environment: dict | None  # device, date, versions...; None for a record kept by hand
    figure: Path | None  # a PNG the benchmark drew itself, beside the record


class Markdown(NamedTuple):
    """What a record's ``.md`` holds."""

    title: str
    notes: str
    columns: tuple
    rows: tuple  # one dict per row, its cells as numbers where they read as one


class Chart(NamedTuple):
    """What the plot of a record draws."""

    groups: list  # per row: its label and its (column, value) bars
    axis_label: str
    columns: list  # the timing columns, in the table's order


def read_markdown(text):
    """The title, notes, table columns and rows of a record's ``.md``."""
    lines = text.splitlines()
    title = lines[0].removeprefix("# ").strip() if lines and lines[0].startswith("# ") else ""
    body = lines[1:] if title else lines
    table = [line for line in body if line.startswith("|")]
    notes = "\n".join(line for line in body if not line.startswith("|")).strip()
    cells = [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in table
             if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip())]
    columns = tuple(cells[0]) if cells else ()
    rows = tuple(dict(zip(columns, (_number(cell) for cell in row))) for row in cells[1:])
    return Markdown(title, notes, columns, rows)


def _number(cell):
    if cell == "-":
        return None
    try:
        return float(cell)
    except ValueError:
        return cell


def read_record(path):
    """The record of ``<name>.json`` or of a lone ``<name>.md``."""
    markdown = path.with_suffix(".md")
    title, notes, columns, rows = read_markdown(markdown.read_text()) if markdown.exists() \
        else Markdown(path.stem, "", (), ())
    environment = None
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        environment, rows = data["environment"], tuple(data["rows"])
        # the notes' first paragraph is the environment's one-line summary: shown as a table
        notes = notes.split("\n\n", 1)[1].strip() if "\n\n" in notes else ""
        extra = [key for row in rows for key in row if key not in columns]
        columns = tuple(columns) + tuple(dict.fromkeys(extra))
    figure = path.with_suffix(".png")
    return Record(path.stem, title or path.stem, notes, columns, rows, environment,
                  figure if figure.exists() else None)


def read_records(results):
    """Every record of the directory ``results``, by name."""
    paths = {path.stem: path for path in sorted(results.glob("*.md"))}
    paths.update({path.stem: path for path in sorted(results.glob("*.json"))})
    return [read_record(paths[name]) for name in sorted(paths)]


# -- the plot --------------------------------------------------------------------------------

def _is_number(value):
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def timing_columns(record):
    """The columns that hold times: numeric in some row, and not a ratio, rate or size."""
    return [column for column in record.columns
            if not _NOT_A_TIME.search(column)
            and any(_is_number(row.get(column)) for row in record.rows)]


def _unit_in(text):
    match = _UNIT_WORD.search(text) if isinstance(text, str) else None
    return _UNIT_NAMES[match.group(1)] if match else None


def row_label(record, row, timings):
    """A row's name: the text of its first (at most two) descriptive cells."""
    parts = []
    for column in record.columns:
        if column in timings or len(parts) == 2:
            break
        value = row.get(column)
        if column != "unit" and isinstance(value, str | int) and value not in ("", "-") \
                and not _NOT_A_TIME.search(column):
            parts.append(str(value))
    return ", ".join(parts) or "-"


def chart(record):
    """The bars of each row and the axis label: values are converted to milliseconds where
    the record mixes units (leaving out those of no known unit), kept as they are otherwise."""
    timings = timing_columns(record)
    notes_unit = _unit_in(record.notes)
    found = []
    for row in record.rows:
        row_unit = _unit_in(row.get("unit"))
        values = [(column, row[column], _unit_in(column) or row_unit or notes_unit)
                  for column in timings if _is_number(row.get(column)) and row[column] > 0]
        if values:
            found.append((row_label(record, row, timings), values))
    units = {unit for _, values in found for _, _, unit in values}
    if len(units - {None}) > 1:
        converted = [(label, [(column, value * _MS_PER[unit]) for column, value, unit in values
                              if unit is not None]) for label, values in found]
        return Chart([group for group in converted if group[1]], "milliseconds (converted)",
                     timings)
    label = _AXIS_LABELS.get(next(iter(units), None), "time, in the table's unit")
    return Chart([(label_, [(c, v) for c, v, _ in values]) for label_, values in found], label,
                 timings)


def plot(record, path):
    """Draw ``record``'s timing columns as horizontal bars, a group per row, into the PNG
    ``path``; False where the record has no timing column."""
    groups, axis_label, timings = chart(record)
    if not groups:
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    colors = {column: pyplot.get_cmap("tab20")(i % 20) for i, column in enumerate(timings)}
    present = {column for _, values in groups for column, _ in values}
    drawn = [column for column in timings if column in present]
    slots = sum(len(values) for _, values in groups) + 0.8 * len(groups)
    legend_rows = math.ceil(len(drawn) / 2)
    figure, axes = pyplot.subplots(figsize=(8, 1.6 + 0.2 * slots + 0.22 * legend_rows),
                                   layout="constrained")
    y, ticks, labels, handles = 0.0, [], [], {}
    for number, (label, values) in enumerate(groups):
        top = y
        for column, value in values:
            handles[column] = axes.barh(y, value, height=0.85, color=colors[column])
            axes.annotate(f"{value:.3g}", (value, y), xytext=(3, 0), textcoords="offset points",
                          va="center", fontsize=7)
            y += 1
        if number % 2:
            axes.axhspan(top - 0.5, y - 0.5, color="0.94", zorder=0)
        ticks.append((top + y - 1) / 2)
        labels.append(textwrap.fill(label, 30))
        y += 0.8
    values = [value for _, group in groups for _, value in group]
    if max(values) / min(values) > 20:
        axes.set_xscale("log")
    axes.set_xlim(right=max(values) * (3 if axes.get_xscale() == "log" else 1.15))
    axes.set_yticks(ticks, labels, fontsize=8)
    axes.set_ylim(y - 0.5, -0.7)
    axes.set_xlabel(axis_label, fontsize=9)
    axes.tick_params(axis="x", labelsize=8)
    axes.grid(axis="x", color="0.85", linewidth=0.6)
    axes.set_axisbelow(True)
    figure.legend([handles[c] for c in drawn], drawn, loc="outside upper center", ncols=2,
                  fontsize=8, frameon=False)
    device = (record.environment or {}).get("device")
    axes.set_title(record.title + (f", {device}" if device else ""), fontsize=10)
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=100, metadata={"Software": None})
    pyplot.close(figure)
    write_if_changed(path, png.getvalue())
    return True


# -- the pages -------------------------------------------------------------------------------

def _cell(value):
    """A value as the scripts print it in their tables, escaped for a Markdown table."""
    if value is None:
        text = "-"
    elif isinstance(value, float):
        text = f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    elif isinstance(value, dict):
        text = ", ".join(f"{key} {_cell(item)}" for key, item in value.items())
    elif isinstance(value, list | tuple):
        text = ", ".join(_cell(item) for item in value[:8]) + (", ..." if len(value) > 8 else "")
    else:
        text = str(value)
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", text)


def _prose(text):
    """The notes' Markdown, with ``<`` and ``>`` outside code spans escaped (the scripts write
    ``'<ratio> <= <most>'``, which Markdown would take for HTML)."""
    parts = re.split(r"(`[^`\n]*`)", text)
    return "".join(part if part.startswith("`") else re.sub(r"([<>])", r"\\\1", part)
                   for part in parts)


def _table(header, rows):
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _environment_rows(environment):
    for key, value in environment.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {'-' if v is None else v}" for k, v in value.items())
        yield key, value


def heading(record):
    environment = record.environment or {}
    where = ", ".join(str(environment[key]) for key in ("device", "date") if environment.get(key))
    return f"{record.title}: {where}" if where else record.title


def page(record, has_plot):
    files = "`, `".join(f"benchmarks/results/{record.name}{suffix}" for suffix in
                        ((".json", ".md") if record.environment is not None else (".md",)))
    parts = [f"# {_prose(heading(record))}", "",
             f"The record `{record.name}`, as written in `{files}`.", ""]
    if record.notes:
        parts += [_prose(record.notes), ""]
    if has_plot:
        parts += [f"![the timing columns of each row of {record.name}]({record.name}.png)", ""]
    if record.figure is not None:
        parts += ["The benchmark's own figure:", "",
                  f"![the figure of {record.name}]({record.name}-figure.png)", ""]
    parts += ["## Table", "",
              _table(record.columns, ([row.get(c) for c in record.columns] for row in record.rows)),
              ""]
    if record.environment is not None:
        parts += ["## Environment", "", _table(("", ""), _environment_rows(record.environment)),
                  ""]
    return "\n".join(parts)


def index_page(records):
    parts = ["# Benchmark records", "",
             "Every record of `benchmarks/results/`, as the scripts of `benchmarks/` wrote it: "
             "its notes, a chart of the times of each row, its table and its environment. The "
             "[benchmarks](../benchmarks.md) page discusses what they show.", "",
             "```{toctree}", ":hidden:", ""]
    parts += [record.name for record in records]
    parts += ["```", "", "| record | benchmark | device | date | rows |", "|---|---|---|---|---|"]
    for record in records:
        environment = record.environment or {}
        parts.append(f"| [`{record.name}`]({record.name}.md) | {_cell(record.title)} | "
                     f"{_cell(environment.get('device'))} | {_cell(environment.get('date'))} | "
                     f"{len(record.rows)} |")
    return "\n".join(parts) + "\n"


def write_pages(app, config):
    results = Path(config.benchmark_results or Path(app.srcdir).parent / "benchmarks/results")
    out = Path(app.srcdir) / "records"
    records = read_records(results)
    expected = {"index.md"}
    for record in records:
        has_plot = plot(record, out / f"{record.name}.png")
        if has_plot:
            expected.add(f"{record.name}.png")
        if record.figure is not None:
            write_if_changed(out / f"{record.name}-figure.png", record.figure.read_bytes())
            expected.add(f"{record.name}-figure.png")
        write_if_changed(out / f"{record.name}.md", page(record, has_plot))
        expected.add(f"{record.name}.md")
    write_if_changed(out / "index.md", index_page(records))
    for stale in out.iterdir():
        if stale.name not in expected:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    logger.info("benchmark pages: %d records from %s", len(records), results)


def setup(app):
    app.add_config_value("benchmark_results", None, "env")
    # config-inited: before Sphinx lists the sources, so the new pages are read
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
