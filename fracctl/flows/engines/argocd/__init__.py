"""The Argo CD engine: the application that manages the object syncs it back.

:mod:`.backend` recreates the fractioning config (one-resource sync, its rehearsal with
Argo CD's own rendering and dry run); :mod:`.objects` any ``KIND/NAME``; :mod:`.sync`
and :mod:`.autosync` the operations and the automated sync both halves share.
"""
