"""A campaign's plans share the victim's data, upload and score maps, and see exactly what they saw alone."""

from __future__ import annotations

from dataclasses import replace

import torch

from hebench.config import DataSpec, SelectiveSpec
from hebench.inversion.evaluate import AttackPlan, submit_plan
from hebench.inversion.memo import Memo, digest


def _observations(plan: AttackPlan, memo: Memo | None) -> list:
    return [obs for _, obs, _, _ in submit_plan(plan, memo=memo).jobs]


def test_plans_that_differ_in_the_view_share_the_victims_work_and_see_what_they_saw_alone():
    base = AttackPlan(data=DataSpec(dataset="digits", clients=2), images=2, seeds=1, dry_run=True, workers=1)
    plans = [
        replace(base, view="selective", selective=SelectiveSpec(mask="sensitivity", ratio=ratio), mask_source=source)
        for ratio in (0.1, 0.3)
        for source in ("sample", "local")
    ] + [replace(base, view="raw")]
    memo = Memo()
    shared = [_observations(plan, memo) for plan in plans]
    alone = [_observations(plan, None) for plan in plans]
    for together, by_itself in zip(shared, alone, strict=True):
        for a, b in zip(together, by_itself, strict=True):
            assert all(torch.equal(x, y) for x, y in zip(a.gradients, b.gradients, strict=True))
            assert (a.masks is None) == (b.masks is None)
            if a.masks is not None:
                assert all(torch.equal(x, y) for x, y in zip(a.masks, b.masks, strict=True))
    # one dataset, one upload per victim batch, a score map per batch attacked (sample) and one of the client's
    # data (local), a mask per ratio, source and batch; every plan asked for the dataset, an upload per batch and,
    # selective, a mask per batch and the map behind it
    assert memo.made == 1 + 2 + (2 + 1) + 2 * 2 * 2
    assert memo.made + memo.reused == 4 * (1 + 2 * 3) + (1 + 2)


def test_a_value_is_made_once_and_keys_tell_values_dtypes_and_shapes_apart():
    memo, calls = Memo(), []
    assert memo.get("k", lambda: calls.append(1) or 5) == 5 and memo.get("k", lambda: calls.append(1) or 6) == 5
    assert calls == [1] and (memo.made, memo.reused) == (1, 1)
    x = torch.arange(6.0)
    assert digest(x[:3]) == digest(torch.tensor([0.0, 1.0, 2.0]))
    assert len({digest(x), digest(x.double()), digest(x.reshape(2, 3)), digest(x + 1)}) == 4
