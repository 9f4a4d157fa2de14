"""Agent-side test harness: drive a device the way the agent does, simulate devices."""
