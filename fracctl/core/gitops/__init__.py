"""The GitOps side as core knows it.

The backends' registry, Helm's release records, rendered manifests, Argo CD's sync-window
schedules.
"""
