"""Benchmarks of the whole device (control latency, footprint, soak): apart from the runtime path."""
