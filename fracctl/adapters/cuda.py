"""The CUDA driver API through ctypes on ``libcuda`` (no PyTorch, no toolkit).

Only what the memory probe needs: ``cuInit``, ``cuDeviceGet``, ``cuCtxCreate``,
``cuMemGetInfo``, ``cuMemAlloc`` / ``cuMemFree`` and ``cuCtxDestroy``. Errors come back as
the driver's own names (``CUDA_ERROR_OUT_OF_MEMORY``).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fracctl.core.mps import MIB
from fracctl.errors import ExternalError

LIBRARY_NAMES = ("libcuda.so.1", "libcuda.so")
CUDA_SUCCESS = 0


class CudaError(Exception):
    """A driver call failed; ``name`` is the driver's error name."""

    def __init__(self, call: str, code: int, name: str) -> None:
        super().__init__(f"{call} failed: {name} ({code})")
        self.call = call
        self.code = code
        self.name = name


@dataclass(frozen=True)
class DeviceInfo:
    """What the probe reports about the device and driver."""

    name: str
    driver_version: int  # e.g. 12080 for CUDA 12.8
    free_mib: int
    total_mib: int


class CudaDriver:
    """One context on one device, and allocations in it."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.ctx = ctypes.c_void_p()
        self.live: list[int] = []

    @classmethod
    def load(
        cls, *, env: Mapping[str, str] | None = None, names: Sequence[str] = LIBRARY_NAMES
    ) -> CudaDriver:
        """Load libcuda after setting ``env`` in this process (read by ``cuInit``).

        Raises:
            ExternalError: no NVIDIA driver library on this host.
        """
        for key, value in (env or {}).items():
            os.environ[key] = value
        errors = []
        for name in names:
            try:
                return cls(ctypes.CDLL(name))
            except OSError as e:
                errors.append(f"{name}: {e}")
        raise ExternalError(
            "cannot load the CUDA driver library (" + "; ".join(errors) + ")",
            hint="probe-memory needs an NVIDIA driver and GPU on this host",
        )

    def _call(self, name: str, *args: object) -> None:
        try:
            fn = getattr(self.lib, name)
        except AttributeError:
            raise CudaError(name, -1, f"{name} is not exported by this libcuda") from None
        code = int(fn(*args))
        if code != CUDA_SUCCESS:
            raise CudaError(name, code, self.error_name(code))

    def error_name(self, code: int) -> str:
        """``cuGetErrorName`` for ``code``."""
        text = ctypes.c_char_p()
        try:
            if int(self.lib.cuGetErrorName(code, ctypes.byref(text))) == 0 and text.value:
                return text.value.decode()
        except AttributeError:
            pass
        return f"CUDA error {code}"

    def open(self, device: int) -> DeviceInfo:
        """``cuInit``, ``cuDeviceGet``, ``cuCtxCreate`` and a first ``cuMemGetInfo``."""
        self._call("cuInit", ctypes.c_uint(0))
        version = ctypes.c_int()
        self._call("cuDriverGetVersion", ctypes.byref(version))
        dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(device))
        raw = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", raw, ctypes.c_int(len(raw)), dev)
        self._call("cuCtxCreate_v2", ctypes.byref(self.ctx), ctypes.c_uint(0), dev)
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return DeviceInfo(
            name=raw.value.decode(errors="replace"),
            driver_version=version.value,
            free_mib=(free.value or 0) // MIB,
            total_mib=(total.value or 0) // MIB,
        )

    def alloc(self, nbytes: int) -> int:
        """``cuMemAlloc``; the device pointer."""
        ptr = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        self.live.append(ptr.value)
        return int(ptr.value)

    def free(self, ptr: int) -> None:
        """``cuMemFree``."""
        self._call("cuMemFree_v2", ctypes.c_uint64(ptr))
        self.live.remove(ptr)

    def close(self) -> None:
        """Free what is left and destroy the context."""
        for ptr in list(self.live):
            try:
                self.free(ptr)
            except CudaError:
                self.live.remove(ptr)
        if self.ctx.value:
            try:
                self._call("cuCtxDestroy_v2", self.ctx)
            except CudaError:
                pass
            self.ctx = ctypes.c_void_p()
