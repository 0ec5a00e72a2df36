"""Fractional GPUs: which pods use them, the nodes' opt-in policy, KAI's words, the CRD."""
