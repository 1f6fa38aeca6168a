"""What an attack record's ``view`` names: what the attacked aggregator saw of an upload.

A view is not a mode: a secure-aggregation sum is attacked as a ``raw`` view of several clients, a selective
update as ``selective``, a ciphertext as ``he`` (nothing usable). Records store the strings.
"""

from __future__ import annotations

from enum import StrEnum


class View(StrEnum):
    RAW = "raw"  # a plaintext update (one client's, a victim's or a sum)
    HE = "he"  # ciphertext: nothing usable
    SELECTIVE = "selective"  # the plaintext coordinates of a selectively encrypted update
