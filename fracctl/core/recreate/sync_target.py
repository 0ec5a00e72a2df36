"""The one object a GitOps backend is asked to bring back, and what must equal git's.

For ``fracctl recreate`` it is the fractioning config, whose immutable node selector must
be git's (:meth:`SyncTarget.of_config`); for ``fracctl recreate KIND/NAME`` it is a
built-in object, whose immutable fields that git changes must be git's
(:meth:`SyncTarget.of_object`). A backend's rehearsal finds it in the backend's own
rendering and holds those fields to git's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fracctl.core.drift.immutability import get_path
from fracctl.core.kube.resources import ResourceRef, split_api_version


class ConfigTarget(Protocol):
    """What the configured target says of itself (``config.target``)."""

    @property
    def group(self) -> str: ...  # noqa: D102
    @property
    def kind(self) -> str: ...  # noqa: D102
    @property
    def name(self) -> str: ...  # noqa: D102
    @property
    def selector_field(self) -> str: ...  # noqa: D102
    @property
    def ref(self) -> ResourceRef: ...  # noqa: D102


#: The words of the guard policy's refusal of an update that restarts the MPS daemons
#: (:func:`fracctl.core.recreate.guard_policy.update_message`).
DAEMONS_REFUSAL = "restarts the MPS daemons"


@dataclass(frozen=True)
class SyncTarget:
    """Which object (group, kind, name, namespace), and the fields held to git's."""

    group: str
    kind: str
    name: str
    ref: ResourceRef
    namespace: str = ""  # "" for a cluster-scoped object
    fields: tuple[str, ...] = ()  # dotted paths: the backend must render git's values there
    refusal: str = ""  # how the API server refuses git's change ("spec: Forbidden"), or ""

    @classmethod
    def of_config(cls, t: ConfigTarget) -> SyncTarget:
        """The fractioning config: its node selector must be git's.

        Besides an immutable field, an engine's apply of it can fail on the guard policy's
        refusal of a change that restarts the daemons (which fracctl's run arms).
        """
        fields = (t.selector_field,)
        return cls(t.group, t.kind, t.name, t.ref, fields=fields, refusal=DAEMONS_REFUSAL)

    @classmethod
    def of_object(
        cls, obj: Mapping[str, Any], ref: ResourceRef, fields: tuple[str, ...], message: str = ""
    ) -> SyncTarget:
        """A built-in object (git's manifest): ``fields`` must be git's.

        ``message`` is the API server's refusal of git's change (drift's dry run); its
        field and cause (``spec: Forbidden``) is what a GitOps engine's failure names.
        """
        group, _ = split_api_version(str(obj.get("apiVersion", "")))
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "") if ref.namespaced else ""
        cause = message.split("is invalid: ", 1)[-1] if "is invalid: " in message else ""
        refusal = ": ".join(cause.split(": ")[:2]) if cause else ""
        return cls(group, str(obj.get("kind")), str(meta.get("name")), ref, namespace, fields,
                   refusal)  # fmt: skip

    @property
    def label(self) -> str:
        """``Kind/name``, or ``Kind/namespace/name``."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether a rendered manifest is this object.

        One without a namespace is taken to be in the destination's, as the GitOps engine
        applies it.
        """
        group, _ = split_api_version(str(obj.get("apiVersion", "")))
        meta = obj.get("metadata") or {}
        return (
            group == self.group
            and obj.get("kind") == self.kind
            and meta.get("name") == self.name
            and str(meta.get("namespace") or "") in ("", self.namespace)
        )

    def refuses(self, line: str) -> bool:
        """Whether a GitOps engine's failure line refuses this object's immutable change."""
        return self.label in line and (
            "immutable" in line or bool(self.refusal and self.refusal in line)
        )

    def values(self, obj: Mapping[str, Any] | None) -> dict[str, Any]:
        """Each held field's value in ``obj``.

        List items included: ``spec.volumeClaimTemplates[0].spec.resources.requests.storage``.
        """
        return {path: get_path(obj or {}, path) for path in self.fields}

    def resource(self) -> dict[str, str]:
        """Argo CD's ``SyncOperationResource`` for it."""
        return {"group": self.group, "kind": self.kind, "name": self.name,
                "namespace": self.namespace}  # fmt: skip
