"""The helm engine: the release's own ``helm upgrade`` (the helm CLI).

:mod:`.backend` runs the operator chart's upgrade, whose hook recreates the fractioning
config, and holds the release reads the HelmRelease shares; :mod:`.objects` creates a
``KIND/NAME`` from helm's rendering, then upgrades the release; :mod:`.journal` is the
run's record of a release it upgrades.
"""
