"""The programs' command lines (`deployplane.cli.programs`) state what their programs
do by default, though they cannot import the modules that say it (too heavy for a
TAB): each value here is the program's own."""

from __future__ import annotations

import click

from deployplane.cli.programs import devcluster, emulator, operator
from deployplane.controller.config import ENV_READINESS
from deployplane.devcluster.workloads import DEFAULT_NODES
from deployplane.emulator.settings import DEFAULT_DATABASE_URL


def option(command: click.Command, name: str) -> click.Parameter:
    (found,) = [p for p in command.params if p.name == name]
    return found


def test_the_emulators_default_database_is_the_emulators() -> None:
    assert emulator.DATABASE_URL == DEFAULT_DATABASE_URL
    assert option(emulator.serve, "database").default == DEFAULT_DATABASE_URL


def test_the_operators_readiness_variable_is_the_one_it_reads() -> None:
    assert operator.READINESS_VARIABLE == ENV_READINESS
    assert ENV_READINESS in (option(operator.run, "readiness").help or "")


def test_the_dev_clusters_kwok_nodes_are_the_dev_clusters() -> None:
    assert devcluster.KWOK_NODES == DEFAULT_NODES
