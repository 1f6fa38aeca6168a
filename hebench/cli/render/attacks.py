"""The leakage table ``hebench attack`` and ``hebench show`` print: one row per attack plan, 80 columns wide."""

from __future__ import annotations

from rich import box
from rich.table import Table

from hebench.analysis.options import DEFAULT_THREAT
from hebench.analysis.success import wilson
from hebench.cli.render.legend import label_keys
from hebench.protections.threats import threat_key
from hebench.results.units import fmt_score


def _adversary(summaries: list[dict]) -> str:
    """Whom the table's leakage is to: the aggregator when only the honest-but-curious aggregator attacked, else
    each plan's adversary (a plan under another threat model names it)."""
    keys = {threat_key(s.get("adversary"), s.get("k"), s.get("strategy")) for s in summaries}
    return "the aggregator" if keys <= {DEFAULT_THREAT} else "each plan's adversary"


def _score(summary: dict, metric: str, spec: str = ".2f") -> str:
    """``mean±std`` over the attacked images (no spread for one image, never ``-0.00``)."""
    scores = summary["scores"]
    n = scores.get("n")  # older summaries do not say: show the spread
    return fmt_score(scores.get(metric), 2 if n is None else int(n), spec, sep="±")


def _success(summary: dict) -> str:
    s = summary["scores"].get("success")
    if not s:
        return "-"
    low, high = (s["low"], s["high"]) if "low" in s and "high" in s else wilson(int(s["k"]), int(s["n"]))
    return f"{s['k']}/{s['n']} {100 * low:.0f}–{100 * high:.0f}%"


def attack_table(summaries: list[dict], keys: dict[str, str] | None = None) -> Table:
    """Leakage per attack plan, narrow enough for 80 columns; ``keys`` shortens long plan labels (legend)."""
    keys = keys if keys is not None else label_keys([s["plan"] for s in summaries])
    threshold = next((s["scores"]["success"]["threshold"] for s in summaries if "success" in s["scores"]), None)
    recovered = "recovered" + (f"\nSSIM≥{threshold:g}" if threshold is not None else "")
    table = Table(
        title=f"leakage to {_adversary(summaries)}: mean±std over images × seeds, best of restarts; "
        "recovered: k/n, 95% CI",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
    )
    table.add_column("view", no_wrap=True)
    for col in ("encr.", recovered, "SSIM", "PSNR dB", "UQI", "VIFp", "label\nacc"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in summaries:
        table.add_row(
            keys.get(s["plan"], s["plan"]),
            f"{100 * s['ratio']:.0f}%",
            _success(s),
            _score(s, "ssim"),
            _score(s, "psnr", ".0f"),
            _score(s, "uqi"),
            _score(s, "vifp"),
            _score(s, "label_accuracy", ".1f"),
        )
    return table
