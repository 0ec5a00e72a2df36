"""Kubernetes objects as plain data: resource references, nodes, label selectors, pod specs."""
