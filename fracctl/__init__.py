"""fracctl: GitOps safety for immutable-field changes and fractional GPU rollouts."""

__version__ = "0.1.0"
