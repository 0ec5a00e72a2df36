"""Typer commands, one module per command group; parse, call a flow, render."""
