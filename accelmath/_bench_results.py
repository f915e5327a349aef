"""The result files of ``benchmarks/`` read, summarized and plotted for ``accelmath bench``
(:mod:`accelmath._benchmarks` runs the scripts that write them).

Each benchmark script writes ``benchmarks/results/<name>-<device>.json`` (and ``.md``) through
``benchmarks/_common.write``::

    {"environment": {"device": ..., "versions": {...}, "date": ..., ...},
     "rows": [{"case": "r2c f64 4088^2", "accelmath stateless": 0.95, "torch.fft": 0.99,
               "stateless / torch": 0.96, ...}, ...],
     "summary": [...]}                              # optional, see below

From each JSON file the runner draws a PNG plot beside it (matplotlib, from the ``bench``
extra) and takes the rows of the summary table: per case, accelmath's number, the best peer's
and their ratio (below 1: accelmath is faster, or smaller). Which columns are accelmath's and
which are peers' is read, in this order, from:

1. the file's optional ``"summary"`` list, each entry ``{"accelmath": column, "peers":
   [columns], "unit": "ms", "label": "warm"}`` (``label``, added to the case's name, and
   ``unit`` optional);
2. :data:`BENCHMARKS`, for the result files whose rows are not cases with columns (a row per
   contender) or whose columns need choosing;
3. the columns' names: numbers whose column starts with ``accelmath`` are accelmath's, those
   starting with a peer's name (:data:`PEERS`) are peers'; ratios (a ``/`` in the name) are
   left out. Where ``accelmath <metric>`` and ``<peer> <metric>`` columns share a metric
   (``accelmath warm ms``, ``sfft warm ms``), each metric makes its own summary row, its unit
   the metric's last word where that is one of :data:`UNITS`.

A row's ``"unit"`` entry, where present, overrides the unit.
"""

import json
from pathlib import Path
from typing import NamedTuple

__all__ = ["BENCHMARKS", "PEERS", "UNITS", "Benchmark", "Comparison", "Result", "SummaryRow",
           "comparisons", "owner", "plot", "pyplot_or_none", "read_result", "summary_rows",
           "summary_table"]

#: The names a peer's column starts with (lower case).
PEERS = ("scipy", "numpy", "cupy", "torch", "jax", "nvmath", "sfft", "published")
#: The units a column's name may end with (``accelmath warm ms``).
UNITS = ("ns", "us", "ms", "s", "B", "kB", "MB", "GB", "KiB", "MiB", "GiB", "%")


class Comparison(NamedTuple):
    """How one result file compares accelmath with its peers.

    ``by="columns"``: each row is a case; ``accelmath`` names the column of accelmath's number
    (the first present), ``peers`` the peers' (the smallest present is the best).
    ``by="rows"``: each row is a contender, named by its ``label`` columns joined; the rows
    whose name starts with one of ``accelmath`` are accelmath's, with their number in
    ``value``, those starting with one of ``peers`` the peers', with theirs in ``value`` or in
    ``peer_values`` (the smallest counts). Rows with equal ``group`` columns make one case (a
    size); without ``group`` each of accelmath's rows is a case. ``metric``, where given, is
    added to the case's name in the summary.
    """

    by: str = "columns"
    accelmath: tuple = ()
    peers: tuple = ()
    unit: str = ""
    label: tuple = ("case",)
    value: str = ""
    metric: str = ""
    group: tuple = ()
    peer_values: tuple = ()


class Benchmark(NamedTuple):
    """A benchmark script: whether it needs a GPU, and how each of its result files compares
    (result name -> comparisons; an empty tuple: nothing to compare, only a plot)."""

    needs_gpu: bool
    results: dict = {}


_FFT_PEERS = ("cupy.fft", "torch.fft", "nvmath FFT.execute()")
_SOLVER_PEERS = ("torch", "cupy", "torch no-check")


def _published(metric, value, unit, peer_values=()):
    return Comparison(by="rows", accelmath=("accelmath",), peers=("published",), unit=unit,
                      label=("code",), value=value, metric=metric, group=("size",),
                      peer_values=peer_values)


#: The scripts of ``benchmarks/`` by name, and what the runner knows of them. A script not
#: listed needs a GPU unless it says ``NEEDS_GPU = False`` (see
#: :func:`accelmath._benchmarks.needs_gpu`), and its result files are read by their column
#: names.
BENCHMARKS = {
    "cpu": Benchmark(False, {"cpu": (
        Comparison(accelmath=("accelmath stateless",),
                   peers=("scipy.fft", "numpy.fft", "torch.fft"), unit="host us"),)}),
    "fft": Benchmark(True, {
        "fft-small": (Comparison(accelmath=("accelmath stateless",),
                                 peers=("torch.fft", "cupy.fft", "nvmath stateless"),
                                 unit="host us"),),
        "fft-large": (Comparison(accelmath=("accelmath stateless",), peers=_FFT_PEERS,
                                 unit="device ms"),),
        "fft-round-trip": (Comparison(accelmath=("accelmath stateless",), peers=_FFT_PEERS,
                                      unit="device ms"),)}),
    "first_call": Benchmark(True, {"first-call": (
        Comparison(by="rows", accelmath=("accelmath",), peers=("torch", "cupy"), unit="ms",
                   label=("case", "store"), value="first rfft2 median ms"),)}),
    "overhead": Benchmark(True, {"overhead": ()}),
    "r2c_layouts": Benchmark(True, {"r2c-layouts": (
        Comparison(by="rows", accelmath=("accelmath rfft2",),
                   peers=("torch.fft", "cuFFT 2-D plan"), unit="device ms", label=("way",),
                   value="ms"),)}),
    "solvers": Benchmark(True, {
        "solvers": (Comparison(accelmath=("accelmath",), peers=_SOLVER_PEERS),),
        "solvers-crossover": (Comparison(accelmath=("accelmath",), peers=_SOLVER_PEERS),)}),
    "matmul": Benchmark(True, {"matmul": (
        Comparison(accelmath=("accelmath",), peers=("torch", "cupy", "nvmath Matmul")),)}),
    # both run without a GPU too: on the CPU path, at sizes for it
    "image_subtraction": Benchmark(False, {"image-subtraction": (
        _published("warm", "warm ms", "ms", ("warm ms", "warm core ms")),
        _published("first call, empty store", "first call s (empty store)", "s"),
        _published("first call, warm store", "first call s (warm store)", "s"),
        _published("GPU memory pool peak", "pool peak GB", "GB"))}),
    "image_subtraction_many": Benchmark(False, {"image_subtraction_many": (
        Comparison(by="rows", accelmath=("Dask", "plain loop"), unit="pairs/s",
                   label=("path",), value="pairs/s"),)}),
}


class SummaryRow(NamedTuple):
    """One line of the summary table."""

    benchmark: str  # the result name and its device
    case: str
    unit: str
    accelmath: float
    accelmath_way: str
    peer: float
    peer_name: str

    @property
    def ratio(self):
        """accelmath's number over the best peer's."""
        return self.accelmath / self.peer if self.peer else float("inf")


def _slug(text):
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


class Result(NamedTuple):
    """A result file read: its name (``fft-large``), device, rows, and the path."""

    name: str
    device: str
    environment: dict
    rows: list
    summary: list
    path: Path


def read_result(path):
    """Read a result JSON file; None where it is not one (no ``environment`` and ``rows``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if (not isinstance(data, dict) or not isinstance(data.get("rows"), list)
            or not all(isinstance(row, dict) for row in data["rows"])):
        return None
    env = data.get("environment")
    env = env if isinstance(env, dict) else {}
    device = str(env.get("device", ""))
    suffix = "-" + _slug(device)
    name = path.stem[:-len(suffix)] if device and path.stem.endswith(suffix) else path.stem
    summary = data.get("summary")
    if not (isinstance(summary, list) and all(_summary_entry(e) for e in summary)):
        summary = []  # (none, or not of the form a benchmark writes: inferred instead)
    return Result(name, device, env, data["rows"], summary, path)


def _summary_entry(entry):
    """Whether ``entry`` is one of a result's ``summary`` as a benchmark writes them."""
    return (isinstance(entry, dict) and isinstance(entry.get("accelmath"), str)
            and isinstance(entry.get("peers"), list)
            and all(isinstance(p, str) for p in entry["peers"])
            and isinstance(entry.get("unit", ""), str) and isinstance(entry.get("label", ""), str))


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _measures(row):
    """The numeric columns of a row that are not ratios."""
    return [c for c, v in row.items() if _number(v) and "/" not in c]


def _inferred(rows):
    """The comparisons the columns' names imply: per shared metric, else the first of
    accelmath's columns against every peer's."""
    columns = list(dict.fromkeys(c for row in rows for c in _measures(row)))
    ours = [c for c in columns if c.lower().startswith("accelmath")]
    peers = [c for c in columns if c.lower().startswith(PEERS)]
    by_metric = []
    for column in ours:
        metric = column[len("accelmath"):].strip()
        same = [p for p in peers if metric and p.endswith(" " + metric)]
        if same:
            words = metric.rsplit(" ", 1)
            unit = words[-1] if words[-1] in UNITS else ""
            label = words[0] if unit and len(words) == 2 else ("" if unit else metric)
            by_metric.append(Comparison(accelmath=(column,), peers=tuple(same), unit=unit,
                                        metric=label))
    if by_metric:
        return by_metric
    return [Comparison(accelmath=tuple(ours), peers=tuple(peers))] if ours and peers else []


def comparisons(result):
    """The comparisons of a result file: its own ``summary``, else the table's, else inferred
    from the column names (see the module's docstring)."""
    if result.summary:
        return [Comparison(accelmath=(entry["accelmath"],), peers=tuple(entry["peers"]),
                           unit=entry.get("unit", ""), metric=entry.get("label", ""))
                for entry in result.summary]
    for benchmark in BENCHMARKS.values():
        if result.name in benchmark.results:
            return list(benchmark.results[result.name])
    return _inferred(result.rows)


def _label(row, columns, named=False):
    """The row's values in ``columns``, joined (``named``: each after its column's name)."""
    parts = [f"{c} {row[c]}" if named else str(row[c]) for c in columns
             if row.get(c) not in (None, "", "-")]
    return ", ".join(parts)


def summary_rows(result):
    """The summary table's rows of one result file.

    Examples
    --------
    >>> from pathlib import Path
    >>> from accelmath._bench_results import Result, summary_rows
    >>> rows = [{"case": "fft 64", "accelmath": 2.0, "torch": 4.0, "cupy": 5.0}]
    >>> row, = summary_rows(Result("toy", "cpu", {}, rows, [], Path("toy-cpu.json")))
    >>> row.case, row.peer_name, row.ratio
    ('fft 64', 'torch', 0.5)
    """
    found = []
    where = f"{result.name} ({result.device})" if result.device else result.name
    for comparison in comparisons(result):
        if comparison.by == "rows":
            found += _rows_by_contender(result.rows, comparison, where)
            continue
        for row in result.rows:
            ours = [c for c in comparison.accelmath if _number(row.get(c))]
            theirs = [c for c in comparison.peers if _number(row.get(c))]
            if not ours or not theirs:
                continue
            best = min(theirs, key=lambda c: row[c])
            case = ", ".join(filter(None, [_label(row, comparison.label), comparison.metric]))
            unit = str(row.get("unit") or comparison.unit)
            way = "" if comparison.metric else ours[0]  # the metric names the column
            found.append(SummaryRow(where, case, unit, float(row[ours[0]]), way,
                                    float(row[best]), best))
    return found


def _rows_by_contender(rows, comparison, where):
    groups = {}
    for row in rows:
        groups.setdefault(_label(row, comparison.group, named=True), []).append(row)
    peer_values = comparison.peer_values or (comparison.value,)
    found = []
    for group, members in groups.items():
        named = [(_label(row, comparison.label), row) for row in members]
        peers = [(row[c], name if len(peer_values) == 1 else f"{name} {c}")
                 for name, row in named if comparison.peers and name.startswith(comparison.peers)
                 for c in peer_values if _number(row.get(c))]
        if not peers:
            continue
        best, best_name = min(peers)
        for name, row in named:
            if name.startswith(comparison.accelmath) and _number(row.get(comparison.value)):
                case = ", ".join(filter(None, [group or name, comparison.metric]))
                found.append(SummaryRow(where, case, comparison.unit,
                                        float(row[comparison.value]), "", float(best),
                                        best_name))
    return found


def _cell(value):
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def summary_table(rows):
    """The summary table, in Markdown: per case, accelmath's number, the best peer's, the ratio.

    Examples
    --------
    >>> from accelmath._bench_results import SummaryRow, summary_table
    >>> print(summary_table([SummaryRow("toy", "fft 64", "ms", 2.0, "accelmath", 4.0, "torch")]))
    | benchmark | case | unit | accelmath | best peer | accelmath / best peer |
    |---|---|---|---|---|---|
    | toy | fft 64 | ms | 2 | 4 (torch) | 0.5 |
    """
    lines = ["| benchmark | case | unit | accelmath | best peer | accelmath / best peer |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        way = row.accelmath_way
        way = way[len("accelmath"):].strip(" ,") if way.lower().startswith("accelmath") else way
        ours = _cell(row.accelmath) + (f" ({way})" if way and way != row.case else "")
        lines.append(f"| {row.benchmark} | {row.case} | {row.unit or '-'} | {ours} | "
                     f"{_cell(row.peer)} ({row.peer_name}) | {_cell(row.ratio)} |")
    return "\n".join(lines)


class _Panel(NamedTuple):
    unit: str
    labels: list
    series: dict  # name -> values, one per label (NaN where missing)


def _panel(unit, rows, labels, columns):
    series = {c: [float(row[c]) if _number(row.get(c)) else float("nan") for row in rows]
              for c in columns}
    series = {c: v for c, v in series.items() if any(x == x for x in v)}
    return _Panel(unit, labels, series) if labels and series else None


def _panels(result):
    """The plot's panels: one for the columns compared, or one per unit of the rows compared,
    or (nothing compared) one of every number by the rows' text columns."""
    compared = comparisons(result)
    rows = result.rows
    columns = list(dict.fromkeys(c for comp in compared if comp.by == "columns"
                                 for c in (*comp.accelmath, *comp.peers)))
    if columns:
        rows = [row for row in rows if any(_number(row.get(c)) for c in columns)]
        labels = [_label(row, ("case",)) + (f" ({row['unit']})" if row.get("unit") else "")
                  for row in rows]
        return [_panel(compared[0].unit, rows, labels, columns)]
    if compared:
        units = {}
        for comp in compared:
            units.setdefault(comp.unit, []).extend([comp.value, *comp.peer_values])
        labels = [_label(row, (*compared[0].group, *compared[0].label)) for row in rows]
        return [_panel(unit, rows, labels, list(dict.fromkeys(cs))) for unit, cs in units.items()]
    text = [c for c in dict.fromkeys(c for row in rows for c in row)
            if any(isinstance(row.get(c), str) for row in rows)]
    columns = list(dict.fromkeys(c for row in rows for c in _measures(row)))
    return [_panel(columns[0] if len(columns) == 1 else "", rows,
                   [_label(row, text) for row in rows], columns)]


def plot(result, pyplot):
    """Draw a result file's numbers as grouped horizontal bars into ``<file>.png`` beside it,
    a panel per unit; return the PNG's path, or None where there is nothing to draw."""
    panels = [panel for panel in _panels(result) if panel is not None]
    if not panels:
        return None
    heights = [0.22 * len(p.labels) * max(1, len(p.series)) + 1.2 for p in panels]
    figure, axes_list = pyplot.subplots(len(panels), 1, squeeze=False,
                                        figsize=(9, min(max(2.5, sum(heights)), 60)),
                                        gridspec_kw={"height_ratios": heights})
    for axes, panel in zip(axes_list[:, 0], panels):
        bar = 0.8 / len(panel.series)
        for index, (name, data) in enumerate(panel.series.items()):
            axes.barh([i + index * bar for i in range(len(panel.labels))], data, height=bar,
                      label=name)
        axes.set_yticks([i + 0.4 - bar / 2 for i in range(len(panel.labels))])
        axes.set_yticklabels(panel.labels, fontsize=8)
        axes.invert_yaxis()
        values = [x for v in panel.series.values() for x in v if x == x and x > 0]
        if values and max(values) / min(values) > 30:
            axes.set_xscale("log")
        axes.set_xlabel(panel.unit or "value", fontsize=9)
        axes.legend(fontsize=7, loc="best")
    env = result.environment
    axes_list[0, 0].set_title(f"{result.name}: {result.device}, {env.get('date', '')}",
                              fontsize=10)
    figure.tight_layout()
    path = result.path.with_suffix(".png")
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path


def owner(name, scripts):
    """The script that writes result ``name``: the table's, else the one whose slug it
    starts with (the longest)."""
    for script in scripts:
        if name in BENCHMARKS.get(script, Benchmark(True)).results:
            return script
    matches = [s for s in scripts for form in {s, _slug(s)}
               if name == form or name.startswith(form + "-")]
    return max(matches, key=len) if matches else None


def pyplot_or_none(out):
    """matplotlib's pyplot (its Agg back end), or None where matplotlib is missing, said on
    ``out``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        out.write("matplotlib is not installed (pip install \".[bench]\"): no plots\n")
        return None
    return pyplot
