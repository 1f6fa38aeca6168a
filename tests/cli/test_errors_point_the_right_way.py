"""Errors that name the real problem: a mistyped subcommand, a dataset fetched another way, a missing --path."""

from __future__ import annotations

from typer.testing import CliRunner

from hebench.cli.main import app

runner = CliRunner()


def test_a_mistyped_compare_subcommand_is_suggested_not_taken_for_a_run():
    result = runner.invoke(app, ["compare", "librarie"])
    assert result.exit_code == 2
    assert "Did you mean 'libraries'" in result.output and "RUN_B" not in result.output


def test_a_torchvision_dataset_says_how_it_is_obtained():
    result = runner.invoke(app, ["datasets", "fetch", "cifar10"])
    assert result.exit_code == 2, result.output
    assert "torchvision" in result.output and "data.download=true" in result.output
    assert "source checkout" not in result.output


def test_bundled_and_unknown_datasets_say_so():
    digits = runner.invoke(app, ["datasets", "fetch", "digits"])
    assert digits.exit_code == 2 and "nothing to fetch" in digits.output
    unknown = runner.invoke(app, ["datasets", "fetch", "imagenet"])
    assert unknown.exit_code == 2 and "datasets list" in unknown.output and "source checkout" not in unknown.output


def test_a_missing_local_copy_is_named_with_what_to_pass(tmp_path):
    result = runner.invoke(app, ["datasets", "fetch", "femnist", "--path", str(tmp_path / "missing")])
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.output and "fed_emnist.tar.bz2" in result.output
    assert "results already written" not in result.output
