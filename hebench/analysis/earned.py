"""What earns a threat model's cell: the test behind what the adversary obtains, and how its view was obtained."""

from __future__ import annotations

from dataclasses import dataclass

LIVE, DECLARED = "live", "declared"


@dataclass(frozen=True)
class Earned:
    """The test that earns a cell (its rule's evidence, ``path::name``), what the adversary obtains there, and how
    the attacked view was obtained: ``live`` from the protocol running with the adversary's party in it (a conduit:
    hebench's own parties on loopback, a red-team view), ``declared`` built from the rule (a simulated view)."""

    evidence: str
    obtains: str | None
    how: str

    @property
    def name(self) -> str:
        """The test's name (the document's, for evidence that is not a test)."""
        path, _, name = self.evidence.partition("::")
        return name or path.rsplit("/", 1)[-1]

    @property
    def path(self) -> str:
        return self.evidence.partition("::")[0]

    def line(self, ref: int) -> str:
        what = f"obtains {self.obtains}, " if self.obtains else ""
        return f"[{ref}] {what}{self.how}: {self.name} ({self.path})"
