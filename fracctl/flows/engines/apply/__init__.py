"""The apply engine: fracctl creates the object itself, by server-side apply of git's object.

:mod:`.backend` recreates the fractioning config; :mod:`.objects` any ``KIND/NAME``.
"""
