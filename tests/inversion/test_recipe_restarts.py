"""Each recipe says how many restarts its verdicts need; a campaign that runs fewer is warned of, and a recipe
with a restart count that is not a positive integer is refused."""

from __future__ import annotations

import pytest
import yaml

from hebench.errors import ParameterError
from hebench.inversion.evaluate import AttackPlan
from hebench.inversion.evidence import weak_attack_notes
from hebench.inversion.recipes import load_recipe


def test_the_lbfgs_recipes_need_several_restarts_and_the_others_one():
    assert (load_recipe("dlg").restarts, load_recipe("idlg").restarts) == (4, 4)
    assert (load_recipe("inverting-gradients").restarts, load_recipe("imprint").restarts) == (1, 1)


def test_fewer_restarts_than_the_recipe_needs_are_warned_and_enough_are_not():
    plans = [AttackPlan(attack="dlg", restarts=2), AttackPlan(attack="inverting-gradients", restarts=1)]
    (note,) = weak_attack_notes([*plans, AttackPlan(attack="imprint", restarts=1)])
    assert note.startswith("dlg ran with best of 2 restart(s) where its recipe needs best of 4")
    assert weak_attack_notes([AttackPlan(attack="dlg", restarts=4), AttackPlan(attack="idlg", restarts=8)]) == []


@pytest.mark.parametrize("restarts", [0, 2.5, "four"])
def test_a_recipe_whose_restarts_are_not_a_positive_integer_is_refused(tmp_path, restarts):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "restarts": restarts}))
    with pytest.raises(ParameterError, match="restarts"):
        load_recipe(str(path))
