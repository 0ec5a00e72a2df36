"""What the tests share: the cluster builders, the real Argo CD and Flux harnesses, the
stand-ins for what cannot run here, and the fixtures of each feature."""
