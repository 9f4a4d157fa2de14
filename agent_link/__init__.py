"""Protocol v1 messages, MQTT link, outbox and the agent-side test harness."""
