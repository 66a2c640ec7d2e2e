"""``kafka.assignment_strategy`` to kafka-python's assignors, and the refusal of a group whose
members speak the other protocol naming the setting. The listener calls under each
protocol, on both brokers: tests/integration/test_handover.py."""

from __future__ import annotations

from typing import get_args

import pytest
from kafka.coordinator.assignors.abstract import RebalanceProtocol  # type: ignore[import-untyped]
from kafka.errors import InconsistentGroupProtocolError  # type: ignore[import-untyped]

from driftwatch.kafka.assignors import AssignmentStrategy, assignors
from driftwatch.kafka.first_contact import refusal
from driftwatch.settings.kafka import KafkaSettings


def test_every_setting_names_one_assignor_of_that_name() -> None:
    choices = get_args(KafkaSettings.model_fields["assignment_strategy"].annotation)
    assert set(choices) == set(get_args(AssignmentStrategy))
    for strategy in get_args(AssignmentStrategy):
        (assignor,) = assignors(strategy)
        assert assignor.name == strategy


@pytest.mark.parametrize(("strategy", "protocol"), [
    ("cooperative-sticky", RebalanceProtocol.COOPERATIVE),
    ("range", RebalanceProtocol.EAGER),
    ("roundrobin", RebalanceProtocol.EAGER),
])
def test_the_protocol_each_strategy_speaks(strategy: AssignmentStrategy,
                                           protocol: RebalanceProtocol) -> None:
    (assignor,) = assignors(strategy)
    assert assignor().supported_protocols() == [protocol]


def test_a_group_of_the_other_protocol_is_a_refusal_naming_the_setting() -> None:
    refused = refusal(InconsistentGroupProtocolError(), (), "fleet", "consuming")
    assert refused is not None
    assert str(refused).startswith(
        "InconsistentGroupProtocolError while consuming, joining group fleet: its members use "
        "another protocol: agents whose kafka.assignment_strategy is of the other kind")
