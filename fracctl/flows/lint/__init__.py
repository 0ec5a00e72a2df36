"""``fracctl lint``: the manifest rules over rendered YAML, offline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from fracctl.config import Config
from fracctl.core.lint import LintReport, LintSettings, Located, check, object_name


def settings(config: Config) -> LintSettings:
    """The lint policy: the configuration's sections, passed whole."""
    return LintSettings(config.labels, config.target, config.cluster, config.pods, config.lint)


def lint(config: Config, *, paths: Sequence[str], stdin: TextIO) -> LintReport:
    """Read every input and run every rule.

    Args:
        config: the configuration (the label policy, the target's naming, ``lint:``).
        paths: files, folders, or ``-`` for standard input.
        stdin: what ``-`` reads.

    Raises:
        UsageError: a path does not exist.
        ExternalError: an input cannot be read or is not valid YAML (exit 3).
    """
    from fracctl.adapters.manifests import line_of, read_inputs

    docs, inputs = read_inputs(paths, stdin)
    findings = check([d.obj for d in docs], settings(config))
    located = [
        Located(
            f, docs[f.index].file, line_of(docs[f.index], f.path), object_name(docs[f.index].obj)
        )
        for f in findings
    ]
    return LintReport(located, files=inputs, objects=len(docs))
