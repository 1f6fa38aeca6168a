"""What the terminal and the report say per link, from records: steady round walls, measured or modelled, time
held by the link against compute, time-to-accuracy, and the protection to choose on each link."""

from __future__ import annotations

import pytest
from rich.console import Console

from hebench.analysis.links import choose_per_link
from hebench.cli.render.links import links_table
from hebench.config import NetworkSpec
from hebench.links.plan import plan_network
from hebench.links.rows import link_rows
from hebench.results.fields import Phase, Phases
from hebench.results.records import (
    ConfigurationRecord,
    ModelledRoundRecord,
    PartyRoundRecord,
    TimeToAccuracyRecord,
)


def configuration(label: str, profile: str, emulation: str) -> ConfigurationRecord:
    spec = NetworkSpec.model_validate({"clients": {"profile": profile}, "emulation": emulation})
    network = {**plan_network(spec, clients=1, seed=0).to_json(), "applied": {}}
    return ConfigurationRecord(
        config=label, mode="raw", adapter="plain", params={}, model="mlp", parameters=10, network=network
    )


def rounds(label: str, walls: tuple[float, ...], held: float | None) -> list[PartyRoundRecord]:
    out = []
    for r, wall in enumerate(walls):
        out.append(PartyRoundRecord(config=label, role="aggregator", round=r, round_wall_s=wall))
        phases = Phases({"train": Phase(wall_s=0.2, cpu_s=0.1), "wait": Phase(wall_s=1.0, cpu_s=0.0)})
        out.append(
            PartyRoundRecord(
                config=label,
                role="client",
                client=0,
                round=r,
                phases=phases,
                network=None if held is None else {"transfer_s": held},
            )
        )
    return out


def records() -> list:
    return [
        configuration("raw@lte", "lte", "userspace"),
        *rounds("raw@lte", (9.0, 2.0, 2.2), held=1.5),
        configuration("ckks@lte", "lte", "userspace"),
        *rounds("ckks@lte", (40.0, 20.0, 22.0), held=19.0),
        TimeToAccuracyRecord(config="ckks@lte", target=0.5, round=1, accuracy=0.6, wall_s=60.0, link="lte"),
        configuration("compact@lte", "lte", "model"),
        *rounds("compact@lte", (0.5, 0.4, 0.4), held=0.0),
        *(
            ModelledRoundRecord(
                config="compact@lte", round=r, link="lte", loopback_round_wall_s=0.4, round_wall_s=w, transfer_s=w - 0.4
            )
            for r, w in enumerate((5.0, 3.0, 3.4))
        ),
    ]


def test_rows_average_steady_rounds_measured_or_modelled():
    rows = {r.config: r for r in link_rows(records())}
    assert rows["raw@lte"].round_wall_s == pytest.approx(2.1) and not rows["raw@lte"].modelled  # round 0: warm-up
    assert rows["compact@lte"].round_wall_s == pytest.approx(3.2) and rows["compact@lte"].modelled
    assert rows["ckks@lte"].client_transfer_s == 19.0 and rows["ckks@lte"].client_compute_cpu_s == 0.1
    assert rows["ckks@lte"].protection == "ckks" and rows["ckks@lte"].uplink_mbit == 0.75
    assert rows["ckks@lte"].time_to_accuracy is not None and rows["raw@lte"].time_to_accuracy is None


def test_what_to_choose_on_a_link_names_the_fastest_protection_with_its_evidence():
    (line,) = choose_per_link(link_rows(records()))
    assert line.startswith("On lte: compact has the shortest round of the protections (3.2 s, 1.52× raw; modelled")
    assert "then ckks 21 s" in line and "First to the target accuracy: ckks" in line


def test_the_terminal_table_fits_80_columns_and_marks_modelled_walls():
    console = Console(width=80, record=True)
    console.print(links_table(records(), {}))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "3.2 s m" in text and "r2 60 s" in text
    assert links_table([], {}) is None


def test_clients_without_a_link_ledger_show_no_transfer_rather_than_zero():
    """Flower's clients on kernel links keep no ledger: their time on the link is unknown, not 0 s."""
    recs = [configuration("raw@lte", "lte", "kernel"), *rounds("raw@lte", (9.0, 2.0, 2.2), held=None)]
    (row,) = link_rows(recs)
    assert row.client_transfer_s is None and row.round_wall_s == pytest.approx(2.1)
