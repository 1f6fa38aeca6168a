"""A suite's attacks: one plan per configuration (what its aggregator saw) plus the
privacy–overhead frontier (masks × encrypted ratios × attackers × mask sources ×
batch sizes × threat models); records, summaries and PNG grids."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, get_args

from hebench.config import (
    Configuration,
    ModelSpec,
    PrivacySpec,
    SelectiveSpec,
    Suite,
    ThreatSpec,
    parse_suite,
)
from hebench.errors import ParameterError
from hebench.inversion.evaluate import (
    AttackPlan,
    SubmittedPlan,
    public,
    save_grid,
    submit_plan,
    summarize,
    threat_fields,
)
from hebench.inversion.evaluate import public as public_record
from hebench.inversion.memo import Memo
from hebench.inversion.parallel import RestartPool, shared_pool
from hebench.inversion.views.conduits import Protocol
from hebench.protections import AttackerView
from hebench.protections.dp.threats import NOISED
from hebench.protections.selective.threats import visible_rule
from hebench.protections.threats import Adversary, Conduit, NotDefined, Obtains, Outcome, Strategy, conduit_rule
from hebench.results import ResultWriter
from hebench.results.reader import read_hebench_records
from hebench.results.records import AttackSummaryRecord, ConfigurationRecord, RunRecord
from hebench.results.run_folder import results_file, safe_label

# Which published setting each attacker corresponds to (shown beside the figures).
ATTACKER_NOTES = {
    "mask-aware": "knows the mask; encrypted coordinates left out of the loss (hebench's original view)",
    "fedml-he-zeros": "FedML-HE's attacker (its Fig. 9): matches the whole update, encrypted coordinates read as 0",
    "fedml-he-noise": "FedML-HE-style attacker: encrypted coordinates read as noise at the visible scale",
}


def view_of(config: Configuration) -> tuple[str, SelectiveSpec | None]:
    """The attack view of a configuration's honest-but-curious aggregator (its mode's threat rules): a sum is a
    plain update of several clients (:func:`clients_seen` says how many); one aggregator's shares are as
    unusable as ciphertext."""
    return threat_view(config, ThreatSpec().outcome(config, 2))


def clients_seen(suite: Suite, config: Configuration, threat_clients: int) -> int:
    """Clients averaged in the update the attacker sees: a secure-aggregation view is the round's whole sum."""
    if config.spec.attacker_view is not AttackerView.SUM:
        return threat_clients
    per_round = suite.training.clients_per_round or suite.data.clients
    return max(threat_clients, per_round if isinstance(per_round, int) else threat_clients)


def threat_view(config: Configuration, outcome: Outcome) -> tuple[str, SelectiveSpec | None]:
    """The attack view of what an adversary obtains: a plain update (its own, a victim's or a sum), the plaintext
    part of a selective update, or nothing usable."""
    if outcome.obtains in (Obtains.EVERY_UPDATE, Obtains.VICTIM, Obtains.SUM):
        return "raw", None
    if outcome.obtains is Obtains.VISIBLE:
        return "selective", config.selective
    return "he", None


def threat_plan(suite: Suite, config: Configuration, threat: ThreatSpec, outcome: Outcome) -> dict[str, Any]:
    """A plan's threat fields: who attacks, what it obtains (with the evidence), how many clients' updates are in
    it, and the real protocol path (conduit) it is obtained through where hebench has one."""
    per_round = suite.training.clients_per_round or suite.data.clients
    round_clients = per_round if isinstance(per_round, int) else 1
    obtains, adversary, mode = outcome.obtains, outcome.adversary, config.mode
    clients = threat.clients
    if obtains is Obtains.SUM:
        clients = max(threat.clients, outcome.clients)
    elif obtains is Obtains.VICTIM:
        clients = 1
    evidence = outcome.evidence
    if obtains is Obtains.VISIBLE:  # a selective configuration's plaintext part: selective's own rule shows it
        evidence = getattr(visible_rule(adversary), "evidence", evidence)
    rule = conduit_rule(config.spec.conduits, outcome)
    conduit = None if rule is None else rule.conduit
    protocol = None
    if rule is not None:
        protocol = Protocol(mode, config.adapter, config.params, config.transport, rule.view).dumps()
    return {
        "clients": clients,
        "adversary": adversary.value,
        "k": outcome.k,
        "strategy": outcome.strategy.value if outcome.strategy else None,
        "obtains": obtains.value,
        "evidence": evidence,
        "config": config.label,
        "conduit": conduit,
        "protocol": protocol,
        "round_clients": round_clients if conduit is not None and conduit.whole_round else 0,
        **({"attack": "imprint"} if outcome.strategy is Strategy.TRAP_WEIGHTS else {}),
    }


WHO = {
    Adversary.COLLUDING_CLIENTS: "collude-{k}",
    Adversary.KEY_HOLDER: "key-holder",
    Adversary.SHARE_HOLDERS: "holders-{k}",
    Adversary.MALICIOUS: "malicious-{strategy}",
    Adversary.OBSERVER: "observer",
}


def _who(outcome: Outcome) -> str:
    """The plan label's part naming the adversary (none for today's honest-but-curious aggregator)."""
    form = WHO.get(outcome.adversary)
    strategy = outcome.strategy.value if outcome.strategy else ""
    return "" if form is None else "/" + form.format(k=outcome.k, strategy=strategy)


def _suffix(spec: Any, attacker: str, source: str, mask: str | None, batch: int, threat: Any) -> str:
    parts = []
    if attacker != "mask-aware" or len(spec.attackers) > 1:
        parts.append(attacker)
    if mask == "sensitivity" and (source != "local" or len(spec.mask_sources) > 1):
        parts.append(f"src-{source}")
    if batch != 1 or len(spec.batch_sizes) > 1:
        parts.append(f"b{batch}")
    if threat.local_steps is not None:
        parts.append(f"E{threat.local_steps}")
    if threat.clients > 1:
        parts.append(f"N{threat.clients}")
    return "".join(f"/{p}" for p in parts)


def plans_for(suite: Suite, dry_run: bool = False, configurations: Collection[str] | None = None) -> list[AttackPlan]:
    """The suite's attack plans; ``configurations`` (labels) limits the per-configuration plans to those."""
    spec = suite.privacy
    if spec is None:
        return []
    plans = []
    clients = suite.training.clients_per_round or suite.data.clients
    per_round = clients if isinstance(clients, int) else 1
    for batch in spec.batch_sizes or (spec.batch_size,):
        for threat in spec.threats:
            common = {
                "attack": spec.attack,
                "model": spec.model,
                "hidden": suite.model.hidden if spec.model == suite.model.name else AttackPlan.hidden,
                "data": suite.data,
                "batch_size": batch,
                "images": spec.images,
                "seeds": spec.seeds,
                "restarts": spec.restarts,
                "steps": spec.steps,
                "seed": suite.seed,
                "dry_run": dry_run,
                "local_steps": threat.local_steps,
                "local_lr": threat.local_lr,
                "local_batch": threat.local_batch,
                "clients": threat.clients,
                "success_ssim": spec.success_ssim,
                "workers": spec.workers,
                "device": spec.device,
            }
            if spec.against_configurations:
                for config in suite.configurations:
                    if config.tee is not None:  # a modelled row: its leakage is not modelled, so not attacked
                        continue
                    if configurations is not None and config.label not in configurations:
                        continue
                    try:
                        outcome = threat.outcome(config, per_round)
                    except NotDefined:  # this mode has no such adversary (checked when the suite was read)
                        continue
                    view, selective = threat_view(config, outcome)
                    seen = {**common, **threat_plan(suite, config, threat, outcome)}
                    for attacker in spec.attackers if view == "selective" else ("mask-aware",):
                        name = config.label + _suffix(spec, attacker, "local", None, batch, threat) + _who(outcome)
                        plans.append(
                            AttackPlan(
                                view=view, selective=selective, label=name, attacker=attacker, dp=config.dp, **seen
                            )
                        )
            for mask in spec.masks:
                for ratio in spec.ratios:
                    selective = SelectiveSpec(mask=mask, ratio=ratio, samples=spec.sensitivity_samples)
                    for source in spec.mask_sources if mask == "sensitivity" else spec.mask_sources[:1]:
                        for attacker in spec.attackers:
                            name = f"frontier/{mask}-{ratio:g}" + _suffix(spec, attacker, source, mask, batch, threat)
                            plans.append(
                                AttackPlan(
                                    view="selective",
                                    selective=selective,
                                    label=name,
                                    attacker=attacker,
                                    mask_source=source,
                                    **common,
                                )
                            )
    return plans


@dataclass(frozen=True)
class RecordedPlans:
    """The attack plans of an existing run, rebuilt from what its folder recorded."""

    suite: Suite  # the run's recorded suite, overrides applied
    plans: list[AttackPlan]
    notes: list[str]  # what differs from the run's own campaign (skipped configurations, plans not rebuilt)


def recorded_plans(path: Path, overrides: Sequence[str] = (), dry_run: bool = False) -> RecordedPlans:
    """Rebuild the views a run's aggregators saw from its records: the suite its ``run`` record holds (the
    validated suite the runner used, ``data.clients`` resolved), its configurations that ran (their
    ``configuration`` records) and, where the run attacked already, a check that each rebuilt plan has the view
    and encrypted ratio its ``attack_summary`` recorded. ``overrides`` (``privacy.*=…``) change how to attack,
    never what was seen."""
    read = read_hebench_records(path)
    records = read.records
    run = next((r for r in reversed(records) if isinstance(r, RunRecord)), None)
    if run is None:
        raise ParameterError(
            f"{path} holds no run record, so its suite and views are unknown",
            "pass a run folder written by `hebench run`, or the suite file itself",
        )
    raw = dict(run.suite)
    default_privacy = raw.get("privacy") is None
    trained = (raw.get("model") or {}).get("name", ModelSpec().name)
    if default_privacy:  # attack the model the run trained, where the attacks can replay it
        raw["privacy"] = {"model": trained} if trained in ATTACKABLE_MODELS else {}
    suite = parse_suite(raw, f"{path} (recorded suite)", list(overrides))
    ran = [c.config for c in records if isinstance(c, ConfigurationRecord)]
    plans = plans_for(suite, dry_run, configurations=set(ran))
    notes = [skipped] if (skipped := read.skipped_note(results_file(path))) else []
    if default_privacy:
        notes.append(_defaults_note(suite, trained))
    missing = [c.label for c in suite.configurations if c.label not in ran and c.tee is None]
    if missing:
        notes.append(f"not attacked, the run has no records of them: {', '.join(missing)}")
    by_name = {p.name: p for p in plans}
    for summary in (r for r in records if isinstance(r, AttackSummaryRecord)):
        plan = by_name.get(summary.plan)
        if plan is None:
            continue
        ratio = plan.selective.ratio if plan.selective else (1.0 if plan.view == "he" else 0.0)
        if plan.view != summary.view or abs(ratio - summary.ratio) > 1e-12:
            raise ParameterError(
                f"the run attacked '{summary.plan}' as view {summary.view} ({summary.ratio:g} encrypted), "
                f"but its recorded suite now gives view {plan.view} ({ratio:g} encrypted)",
                "attack it with the hebench version that wrote the run, or rerun the suite",
            )
    return RecordedPlans(suite, plans, notes)


ATTACKABLE_MODELS = get_args(PrivacySpec.model_fields["model"].annotation)


def _defaults_note(suite: Suite, trained: str) -> str:
    """What a run without a privacy section was attacked with: the attack, its size, and the model."""
    from hebench.inversion.recipes import load_recipe

    spec = suite.privacy
    assert spec is not None
    steps = spec.steps or load_recipe(spec.attack).steps
    size = f"{spec.images} image(s) x {spec.seeds} model seed(s), best of {spec.restarts} restart(s) of {steps} steps"
    if spec.model == trained:
        model = f"on the run's model ({trained})"
    else:
        model = f"on {spec.model}, not the run's {trained} (the attacks replay only {', '.join(ATTACKABLE_MODELS)})"
    return (
        f"the run had no privacy section: its configurations' views were attacked with {spec.attack}, {size}, {model}"
    )


def _same_attack(plan: AttackPlan) -> AttackPlan:
    """Plans that compute the same thing map to one key: at p = 0 and p = 1 mask, source and attacker don't matter;
    who the adversary is doesn't either once what it obtains is fixed (the same view, through the same conduit:
    k only counts in a conduit that subtracts or adds colluders' parts, the strategy only in model inconsistency).
    A red-team view is each adversary's own live round: never shared with another adversary's."""
    protocol = plan.protocol
    if plan.conduit == Conduit.SECAGG and protocol is not None:  # the model check does not change an honest round's sum
        p = Protocol.of(protocol)
        protocol = Protocol(p.mode, p.adapter, {k: v for k, v in p.params.items() if k != "model_check"}).dumps()
    keyed = replace(
        plan,
        label="",
        protocol=protocol,
        adversary=plan.adversary if plan.conduit == Conduit.RED_TEAM else "",
        obtains=None,
        evidence=None,
        config=None,
        k=plan.k if plan.conduit in (Conduit.SHARES, Conduit.SECAGG, Conduit.RED_TEAM) else 0,
        strategy=plan.strategy if plan.conduit in (Conduit.SECAGG_INCONSISTENCY, Conduit.RED_TEAM) else None,
    )
    sel = plan.selective
    if plan.view == "selective" and sel is not None and sel.mask != "layers" and sel.ratio in (0.0, 1.0):
        return replace(
            keyed,
            selective=SelectiveSpec(mask="random", ratio=sel.ratio),
            attacker="mask-aware",
            mask_source="local",
        )
    return keyed


def summary_of(plan: AttackPlan, records: list[dict[str, Any]], grid: Path | None, wall_s: float) -> dict[str, Any]:
    """The ``attack_summary`` record of one plan (the report's row)."""
    selective = plan.selective
    labels = sorted({r["label_source"] for r in records if r.get("label_source")})
    return {
        "plan": plan.name,
        "attack": plan.attack,
        "view": plan.view,
        "mask": selective.mask if selective else None,
        "ratio": selective.ratio if selective else (1.0 if plan.view == "he" else 0.0),
        "model": plan.model,
        "dataset": plan.data.dataset,
        "batch_size": plan.batch_size,
        "images": plan.images,
        "seeds": plan.seeds,
        "restarts": plan.restarts,
        "dry_run": plan.dry_run,
        "attacker": plan.attacker if plan.view == "selective" else None,
        "attacker_note": ATTACKER_NOTES[plan.attacker] if plan.view == "selective" else None,
        "mask_source": plan.mask_source if selective is not None and selective.mask == "sensitivity" else None,
        "threat": plan.threat,
        "local_steps": plan.local_steps,
        "local_lr": plan.local_lr if plan.local_steps else None,
        "clients": plan.clients,
        "dp": plan.dp.model_dump(mode="json") if plan.dp else None,
        **threat_fields(plan),
        "detected": next((r["detected"] for r in records if r.get("detected")), None),
        "dp_bound": dp_bound_of(plan, records) if plan.dp is not None and not plan.dry_run else None,
        "label_source": labels[0] if len(labels) == 1 else labels,
        "wall_s": wall_s,
        "grid": str(grid) if grid else None,
        "scores": summarize([public(r) for r in records], plan.success_ssim),
    }


def dp_bound_of(plan: AttackPlan, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The reconstruction bound the plan's DP noise implies (:mod:`hebench.inversion.scoring.dp_bound`), with the
    measured success set beside it."""
    from hebench.data.registry import load_federated
    from hebench.inversion.scoring.dp_bound import bound_for, verdict

    assert plan.dp is not None
    public = load_federated(plan.data, plan.seed).test_x.numpy()
    bound = bound_for(plan.dp, plan.local_steps or 1, plan.clients, public, plan.success_ssim)
    success = summarize([public_record(r) for r in records], plan.success_ssim).get("success") or {"k": 0, "n": 0}
    # client level: the red-team test that what an adversary obtains is the clipped update and noise it cannot remove
    evidence = {"evidence": NOISED.evidence} if plan.dp.level == "client" else {}
    return {**bound.to_json(), "verdict": verdict(bound.bound, int(success["k"]), int(success["n"])), **evidence}


def check_malicious_models(plans: list[AttackPlan]) -> None:
    """Before any work: every model a malicious aggregator must craft can be crafted (model inconsistency switches
    the non-victims' model off with weights alone; :func:`~hebench.inversion.views.inconsistency.dead_model` says
    which layer would still learn, and the fix)."""
    import torch

    from hebench.data.registry import load_federated
    from hebench.inversion.evaluate import init_model
    from hebench.inversion.views.inconsistency import dead_model

    crafted = {
        (p.model, p.data, p.seed)
        for p in plans
        if p.conduit == Conduit.SECAGG_INCONSISTENCY
        or (p.conduit == Conduit.RED_TEAM and p.strategy == Strategy.MODEL_INCONSISTENCY.value)
    }
    for model, data, seed in crafted:
        shape = load_federated(data, seed).input_shape
        dead_model(init_model(model, shape, 10, seed), torch.rand(2, *shape))


def run_campaign(
    plans: list[AttackPlan],
    writer: ResultWriter,
    out_dir: Path,
    on_result: Callable[[AttackPlan, dict], None] | None = None,
    pool: RestartPool | None = None,
) -> list[dict[str, Any]]:
    """Run every plan; write each record and a summary per plan; save one PNG grid per plan.

    Plans that compute the same attack (p = 0 or 1 under several masks or attackers) run once. Every plan's
    restarts are queued before any is waited for, so restarts that share a model and a threat model run in
    one batch across plans (configurations), images and restarts (:mod:`hebench.inversion.batching`). An
    ``attack_campaign`` record closes the campaign: its duration, workers, device, engine, the largest batch
    and restarts per second.
    """
    check_malicious_models(plans)
    start = time.perf_counter()
    if pool is None and plans:
        pool = shared_pool(plans[0].workers, plans[0].device)
    before = replace(pool.stats, engines=set()) if pool else None
    submitted: dict[AttackPlan, SubmittedPlan] = {}
    memo = Memo()  # the dataset, victims' uploads, score maps and masks the plans share, made once
    for plan in plans:
        key = _same_attack(plan)
        if key not in submitted:
            submitted[key] = submit_plan(plan, pool, memo)
    prepared_s = time.perf_counter() - start  # the victims' observations, built on the host before any restart
    summaries = []
    done: dict[AttackPlan, list[dict[str, Any]]] = {}
    for plan in plans:
        t0 = time.perf_counter()
        key = _same_attack(plan)
        if key in done:
            records = [{**r, "plan": plan.name, "reused": True, **threat_fields(plan)} for r in done[key]]
            for rec in records:
                if on_result:
                    on_result(plan, rec)
        else:
            records = submitted[key].finish((lambda rec, plan=plan: on_result(plan, rec)) if on_result else None)
            done[key] = records
        for rec in records:
            writer.write("attack", public(rec))
        grid = None if plan.dry_run else save_grid(records, out_dir / f"{safe_label(plan.name)}.png")
        summary = summary_of(plan, records, grid, time.perf_counter() - t0)
        writer.write("attack_summary", summary)
        summaries.append(summary)
    if plans and pool is not None and before is not None:
        wall = time.perf_counter() - start
        restarts = pool.stats.restarts - before.restarts
        writer.write(
            "attack_campaign",
            {
                "plans": len(plans),
                "wall_s": wall,
                "observations_s": prepared_s,
                "shared_values": {"made": memo.made, "reused": memo.reused},
                "workers": pool.workers,
                "device": pool.device,
                "engine": ",".join(sorted(pool.stats.engines)) or None,
                "batch_size": pool.stats.largest or None,
                "restarts": restarts,
                "restarts_per_s": restarts / wall if restarts and wall > 0 else None,
            },
        )
    return summaries
