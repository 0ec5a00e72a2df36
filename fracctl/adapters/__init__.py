"""The only code that touches the outside world."""
