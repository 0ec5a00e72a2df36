"""Pure decisions of a recreate: its plan, its rehearsal, its target, its lock and guard policy."""
