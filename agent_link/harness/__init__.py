"""Agent-side test harness: drive a device the way the agent does (see docs/harness.md)."""

from agent_link.harness.client import AgentHarness, HarnessTimeout
from agent_link.harness.contract import ContractError, Violation, assert_contract, check_contract

__all__ = [
    "AgentHarness",
    "ContractError",
    "HarnessTimeout",
    "Violation",
    "assert_contract",
    "check_contract",
]
