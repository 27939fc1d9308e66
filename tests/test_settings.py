"""One definition of each setting: the command line, a job and a recipe take the optimizer's and the gate's
own defaults (`OptimizeConfig`, `GateConfig`), and one word keeps one sign (`--tolerance`)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import click
import pytest
import typer
from pydantic import BaseModel
from typer.testing import CliRunner

from atoll.cli import app
from atoll.commands.gate import GATE_ONLY
from atoll.commands.optimize import RUN_ONLY
from atoll.evals import check_suite
from atoll.optimizer import RULE_OPTIONS, AcceptanceRule, GateConfig, ObjectiveRule, OptimizeConfig
from atoll.service import JobOptions, RecipeSettings
from atoll.service._job_models import JobRequestOptions
from atoll.worlds.base.stats import GateRule

RULES: dict[str, type[BaseModel]] = {"rule": AcceptanceRule, "objective_rule": ObjectiveRule}
JOB_ONLY = {"gate_k", "release", "suite"}
"""A job's options that are not the optimizer's settings (its release gate and what it publishes)."""
JOB_DEFAULTS_ON_PURPOSE = {"train_sample": None}
"""A job learns from every train task (its drafts among them); `optimize run` samples 16."""


def options(*path: str) -> dict[str, click.Parameter]:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {param.name: param for param in command.params if param.name}


def config_default(name: str) -> Any:
    """The default of a config field, or of the rule field a flat option sets."""
    if name in RULE_OPTIONS:
        return RULES[RULE_OPTIONS[name]].model_fields[name].default
    return OptimizeConfig.model_fields[name].default


def test_every_optimize_run_option_is_an_optimizer_setting_with_the_configs_default():
    run = options("run")
    settings = {name: param for name, param in run.items() if name not in RUN_ONLY}
    unknown = [
        name for name in settings if name not in OptimizeConfig.model_fields and name not in RULE_OPTIONS
    ]
    assert unknown == [], "an option optimize run would drop: add it to OptimizeConfig or RUN_ONLY"
    differing = {
        name: (param.default, config_default(name))
        for name, param in settings.items()
        if name != "harness" and param.default != config_default(name)
    }
    assert differing == {}, "CLI default != OptimizeConfig default: (cli, config)"


def test_every_optimize_gate_option_is_a_gate_setting_with_the_configs_default():
    gate = options("gate")
    settings = {name: param for name, param in gate.items() if name not in GATE_ONLY}
    assert set(settings) == set(GateConfig.model_fields)
    differing = {
        name: (param.default, GateConfig.model_fields[name].default)
        for name, param in settings.items()
        if name != "harness" and param.default != GateConfig.model_fields[name].default
    }
    assert differing == {}, "CLI default != GateConfig default: (cli, config)"


def test_the_suite_check_counts_seeds_as_optimize_run_does():
    default_k = OptimizeConfig.model_fields["k"].default
    assert options("suite", "check")["k"].default == default_k
    assert inspect.signature(check_suite).parameters["k"].default == default_k


@pytest.mark.parametrize("model", [JobOptions, RecipeSettings, JobRequestOptions])
def test_a_jobs_and_a_recipes_settings_are_the_optimizers_with_its_defaults_and_bounds(
    model: type[BaseModel],
):
    for name, field in model.model_fields.items():
        if name in JOB_ONLY:
            continue
        own = OptimizeConfig.model_fields[name]  # KeyError: a job setting the optimizer does not have
        assert set(map(repr, own.metadata)) <= set(map(repr, field.metadata)), name  # bounds kept, maybe more
        if field.is_required() or name in JOB_DEFAULTS_ON_PURPOSE:
            continue
        assert field.default == own.default, name
    for name, default in JOB_DEFAULTS_ON_PURPOSE.items():
        assert model.model_fields[name].default == default


def test_a_jobs_optimizer_settings_are_its_options_every_one():
    options = JobOptions(max_proposals=2, max_minutes=3, k=2, patience=1, seed=7, objective="tokens")
    config = options.optimize_config(Path("h"), "scripted")
    for name in set(JobOptions.model_fields) & set(OptimizeConfig.model_fields):
        assert getattr(config, name) == getattr(options, name), name
    assert (config.harness, config.model) == (Path("h"), "scripted")


def test_tolerance_is_one_size_for_the_gate_and_for_a_run():
    """`--tolerance 0.05` means the same bound in both commands: quality may fall 0.05, not more."""
    run = OptimizeConfig.from_options({"harness": "h", "tolerance": 0.05, "objective": "tokens"})
    gate = GateConfig(harness=Path("h"), tolerance=0.05)
    assert (
        run.objective_rule.quality_rule.tolerance == gate.rule(1.0).tolerance == GateRule().tolerance == 0.05
    )
    assert GateConfig(harness=Path("h"), tolerance=-0.05) == gate  # the gate's old spelling


def test_the_gate_says_how_it_read_an_old_negative_tolerance(tmp_path: Path):
    result = CliRunner().invoke(app, ["gate", str(tmp_path / "none"), "--tolerance", "-0.1"])
    assert "--tolerance -0.1 reads as 0.1" in result.output
