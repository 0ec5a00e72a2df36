"""Orchestration: each flow takes a Context and keyword arguments and returns plain data."""
