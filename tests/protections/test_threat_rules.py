"""Threat models as data: every mode's rules name evidence that exists, resolve as documented, and bad threat
sections of a suite fail with the problem and the fix."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hebench.config import parse_suite
from hebench.errors import SuiteError
from hebench.protections import get_mode, mode_names
from hebench.protections.threats import Adversary, Obtains, Strategy, ThreatRule

ROOT = Path(__file__).resolve().parents[2]


def _defined(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in ast.walk(tree))


@pytest.mark.parametrize("mode", mode_names())
def test_every_rules_evidence_names_a_test_or_function_that_exists(mode):
    for rule in get_mode(mode).every_rule:  # every variant's (secagg: active and honest-but-curious)
        path, _, name = rule.evidence.partition("::")
        assert (ROOT / path).is_file(), rule.evidence
        assert _defined(ROOT / path, name), rule.evidence


def _rules(mode: str) -> tuple[ThreatRule, ...]:
    """Every rule of a mode, of each of its variants where its params choose one (secagg's ``params.model``)."""
    spec = get_mode(mode)
    return getattr(spec, "every_rule", spec.threats)


def _red_team(rule: ThreatRule) -> None:
    path, _, name = rule.evidence.partition("::")
    assert name.startswith("test_red_team_"), f"{rule.adversary.value} {rule.strategy}: {rule.evidence}"
    assert (ROOT / path).is_file() and _defined(ROOT / path, name), rule.evidence


@pytest.mark.parametrize("mode", mode_names())
def test_every_rule_of_a_mode_is_earned_by_a_red_team_test_that_exists(mode):
    """Each cell of the threat table: a ``test_red_team_`` test that runs the adversary against the live protocol
    (``pytest -k red_team`` selects them all)."""
    for rule in _rules(mode):
        _red_team(rule)


def test_the_modifiers_rules_are_earned_by_red_team_tests():
    from hebench.protections.dp.threats import RULES as DP
    from hebench.protections.selective.threats import RULES as SELECTIVE
    from hebench.protections.tls.spec import UNDER_TLS

    for rule in (*SELECTIVE, *DP, UNDER_TLS):
        _red_team(rule)


RED_TEAM_FILES = ("raw", "host_he", "selective", "dp", "tls")


def test_every_red_team_test_of_these_protections_earns_a_rule():
    """No red-team test outside the table: each one some rule (a mode's, or a modifier's) names as its evidence."""
    from hebench.protections.dp.threats import RULES as DP
    from hebench.protections.selective.threats import RULES as SELECTIVE

    cited = {r.evidence for m in mode_names() for r in _rules(m)} | {r.evidence for r in (*SELECTIVE, *DP)}
    for package in RED_TEAM_FILES:
        path = ROOT / "tests" / "protections" / package / "test_red_team.py"
        names = [n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]
        tests = [n for n in names if n.startswith("test_")]
        assert tests and all(n.startswith("test_red_team_") for n in tests), path
        for name in tests:
            assert f"{path.relative_to(ROOT)}::{name}" in cited, f"{name} earns no rule"


def test_each_built_in_mode_defines_the_common_adversaries():
    for mode in mode_names():
        adversaries = {r.adversary for r in get_mode(mode).threats}
        assert {
            Adversary.AGGREGATOR,
            Adversary.COLLUDING_CLIENTS,
            Adversary.MALICIOUS,
            Adversary.OBSERVER,
        } <= adversaries


@pytest.mark.parametrize(
    ("mode", "adversary", "k", "strategy", "tls", "obtains"),
    [
        ("host-he", Adversary.AGGREGATOR, 0, None, False, Obtains.NOTHING),
        ("host-he", Adversary.COLLUDING_CLIENTS, 1, None, False, Obtains.EVERY_UPDATE),
        ("decryptor-he", Adversary.COLLUDING_CLIENTS, 1, None, False, Obtains.VICTIM),  # one victim per round
        ("decryptor-he", Adversary.KEY_HOLDER, 0, None, False, Obtains.EVERY_UPDATE),
        ("offload", Adversary.COLLUDING_CLIENTS, 1, None, False, Obtains.VICTIM),  # one victim per round
        ("offload", Adversary.KEY_HOLDER, 0, None, False, Obtains.EVERY_UPDATE),
        ("secagg", Adversary.COLLUDING_CLIENTS, 2, None, False, Obtains.VICTIM),
        ("secagg", Adversary.MALICIOUS, 0, Strategy.MODEL_INCONSISTENCY, False, Obtains.VICTIM),
        ("secagg", Adversary.MALICIOUS, 0, Strategy.DROPOUT_LIE, False, Obtains.SUM),  # active: one view unmasks
        ("secagg", Adversary.MALICIOUS, 0, Strategy.WITHHOLD_NEIGHBOURS, False, Obtains.NOTHING),
        ("secret-sharing", Adversary.SHARE_HOLDERS, 2, None, False, Obtains.NOTHING),
        ("secret-sharing", Adversary.SHARE_HOLDERS, 3, None, False, Obtains.EVERY_UPDATE),
        ("host-he", Adversary.OBSERVER, 0, None, False, Obtains.EVERY_UPDATE),
        ("host-he", Adversary.OBSERVER, 0, None, True, Obtains.NOTHING),
        ("raw", Adversary.OBSERVER, 0, None, True, Obtains.NOTHING),
    ],
)
def test_rules_resolve_to_what_each_adversary_obtains(mode, adversary, k, strategy, tls, obtains):
    got = get_mode(mode).outcome(adversary, k=k, strategy=strategy, tls=tls, clients=3, holders=3)
    assert got.obtains is obtains


def test_a_variant_of_a_mode_resolves_by_its_own_rules():
    from hebench.protections.secagg.params import SecAggParams

    secagg = get_mode("secagg")
    hbc = SecAggParams(model="honest-but-curious")
    for strategy in (Strategy.DROPOUT_LIE, Strategy.WITHHOLD_NEIGHBOURS, Strategy.SPLIT_GRAPH):
        assert secagg.outcome(Adversary.MALICIOUS, strategy=strategy, params=hbc).obtains is Obtains.VICTIM
        assert secagg.outcome(Adversary.MALICIOUS, strategy=strategy, params=SecAggParams()).obtains is not (
            Obtains.VICTIM
        )
    suite = parse_suite(
        {
            **SUITE,
            "configurations": [{"mode": "secagg"}, {"mode": "secagg", "params": {"model": "honest-but-curious"}}],
            "privacy": {"threats": [{"adversary": "malicious-aggregator", "strategy": "withhold-neighbours"}]},
        }
    )
    active, honest = (t.outcome(c, 3) for t in suite.privacy.threats for c in suite.configurations)
    assert (active.obtains, honest.obtains) == (Obtains.NOTHING, Obtains.VICTIM)


def test_colluders_subtract_themselves_from_a_sum():
    got = get_mode("secagg").outcome(Adversary.COLLUDING_CLIENTS, k=1, clients=5)
    assert got.obtains is Obtains.SUM and got.clients == 4


def test_a_selective_configuration_shows_its_plaintext_part_to_the_aggregator():
    got = get_mode("host-he").outcome(Adversary.AGGREGATOR, selective=True)
    assert got.obtains is Obtains.VISIBLE


SUITE = {
    "name": "bad",
    "data": {"dataset": "natural", "clients": 3},
    "configurations": [{"mode": "raw"}, {"mode": "secret-sharing", "params": {"aggregators": 2}}],
}


@pytest.mark.parametrize(
    ("threat", "problem", "fix"),
    [
        ({"adversary": "key-holder"}, "no configuration defines it", "pick one of those"),
        ({"adversary": "colluding-clients", "k": 3}, "leave no victim among the 3 clients", "at most 2"),
        ({"adversary": "share-holders", "k": 3}, "but mode secret-sharing has 2", "at most 2"),
        ({"adversary": "share-holders"}, "share-holders needs k", "set k"),
        ({"adversary": "malicious-aggregator"}, "needs a strategy", "model-inconsistency"),
        ({"adversary": "malicious-aggregator", "strategy": "dropout-lie"}, "dropout-lie", "strategies there"),
        ({"adversary": "observer", "k": 1}, "k counts colluders", "colluding-clients or share-holders"),
        ({"adversary": "nobody"}, "privacy.threats.0.adversary", "fix that field"),
    ],
)
def test_a_bad_threat_is_one_line_with_the_problem_and_the_fix(threat, problem, fix):
    with pytest.raises(SuiteError) as err:
        parse_suite({**SUITE, "privacy": {"threats": [threat]}})
    text = f"{err.value.problem} {err.value.fix}"
    assert problem in text and fix in text and "\n" not in text


def test_attacks_on_token_data_are_refused_before_any_work():
    tokens = {**SUITE, "data": {"dataset": "tokens", "clients": 3}, "privacy": {"threats": [{}]}}
    with pytest.raises(SuiteError) as err:
        parse_suite(tokens)
    assert "token ids" in err.value.problem and "attack an image dataset" in err.value.problem
    parse_suite({**tokens, "privacy": None})  # control: the same suite measures costs


def test_a_threat_defined_by_some_configurations_applies_to_those_only():
    from hebench.inversion.campaign import plans_for

    suite = parse_suite({**SUITE, "privacy": {"threats": [{"adversary": "share-holders", "k": 2}]}})
    assert [p.config for p in plans_for(suite)] == ["secret-sharing[aggregators=2]"]


def test_model_inconsistency_refuses_a_model_the_server_cannot_switch_off_with_weights():
    import torch
    from torch import nn

    from hebench.errors import ParameterError
    from hebench.inversion.evaluate import init_model
    from hebench.inversion.views.inconsistency import dead_model

    saturating = nn.Sequential(nn.Flatten(), nn.Linear(12, 6), nn.Tanh(), nn.Linear(6, 3))  # tanh(-inf) = -1, not 0
    with pytest.raises(ParameterError, match=r"switching off Linear leaves gradients in 3\.weight"):
        dead_model(saturating, torch.rand(2, 3, 2, 2))
    shapes = {"lenet": (3, 32, 32), "mlp": (3, 32, 32), "cnn_dropout": (1, 28, 28), "resnet18": (3, 32, 32)}
    for name, shape in shapes.items():  # every model in the registry can be switched off
        model = init_model(name, shape, 10, 0)
        assert dead_model(model, torch.rand(2, *shape)) is not model


def test_modes_without_a_flower_cipher_are_refused_on_flower_before_any_work(tmp_path):
    from hebench.cli.run import Engine, _runner
    from hebench.errors import ParameterError

    configs = [{"mode": "raw"}, {"mode": "decryptor-he", "adapter": "tenseal-ckks"}, {"mode": "secagg"}]
    suite = parse_suite({**SUITE, "configurations": configs})
    for engine in (Engine.flower, Engine.flower_sim):
        with pytest.raises(ParameterError) as err:
            _runner(engine, None, suite, tmp_path, None)
        assert f"decryptor-he/tenseal-ckks, secagg cannot run on --engine {engine.value}" in err.value.problem
        assert "local runtime" in err.value.fix
    assert _runner(Engine.hebench, None, suite, tmp_path, None) is not None  # control: the local runtime runs them
    assert not any(tmp_path.iterdir())


def test_docs_threats_md_holds_the_table_the_rules_generate():
    from hebench.cli.render.threat_rules import with_table

    doc = (ROOT / "docs" / "threats.md").read_text()
    assert doc == with_table(doc), (
        "docs/threats.md's threat table differs from the rules: run `python -m hebench.cli.render.threat_rules "
        "docs/threats.md`"
    )
