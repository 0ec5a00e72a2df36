"""The fixed names of the local Argo CD: its version, namespace, accounts and API resources.

Every other module of the package takes these from here, so that the version the
binaries are built at, the namespace the processes watch and the accounts the RBAC
settings name are written once.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.kube.resources import ResourceRef

VERSION = "v3.2.11"
NAMESPACE = "argocd"
CI_ACCOUNT = "fracctl-ci"
VIEWER_ACCOUNT = "viewer"
IN_CLUSTER = "https://kubernetes.default.svc"
#: What the CI account may do on its project: what the README asks for, nothing more.
CI_ACTIONS = ("get", "sync")

CONFIGMAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
SECRETS = ResourceRef("", "v1", "secrets", "Secret", True)
APPLICATIONS = ResourceRef("argoproj.io", "v1alpha1", "applications", "Application", True)
APPPROJECTS = ResourceRef("argoproj.io", "v1alpha1", "appprojects", "AppProject", True)
PART_OF = {"app.kubernetes.io/part-of": "argocd"}  # Argo CD only reads labelled settings

Obj = dict[str, Any]
