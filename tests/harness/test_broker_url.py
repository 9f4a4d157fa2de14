"""Broker URL parsing for the harness tools."""

from __future__ import annotations

import pytest

from agent_link.harness.broker_url import BrokerAddress, parse_broker_url


def test_parse_urls() -> None:
    assert parse_broker_url("mqtt://127.0.0.1:1999") == BrokerAddress("127.0.0.1", 1999)
    assert parse_broker_url("broker.local") == BrokerAddress("broker.local", 1883)
    assert parse_broker_url("mqtts://u:p%40ss@h") == BrokerAddress("h", 8883, True, "u", "p@ss")


@pytest.mark.parametrize(
    ("url", "message"), [("http://h", "scheme"), ("mqtt://", "no host"), ("mqtt://h:x", "port")]
)
def test_bad_urls(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_broker_url(url)
