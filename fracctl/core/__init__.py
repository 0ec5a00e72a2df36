"""Pure decisions on plain data. No I/O."""
