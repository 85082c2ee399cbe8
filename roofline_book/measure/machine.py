"""Facts about the machine a run measures: device, caches, memory, software, load.

Each function reads what the OS, torch or the driver reports and returns
None where nothing is reported; nothing here is measured.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else what ``platform`` says)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def parse_cache_size(text: str) -> int:
    """A sysfs cache size (``"32K"``, ``"1024K"``, ``"105M"``) in bytes.

    Examples
    --------
    >>> parse_cache_size("32K"), parse_cache_size("105M\\n")
    (32768, 110100480)
    """
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def cpu_caches() -> dict[int, int]:
    """The CPU's data or unified caches by level, as one core sees them in sysfs (byte).

    An empty dict where the OS reports none.
    """
    found: dict[int, int] = {}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            found[level] = parse_cache_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
    return dict(sorted(found.items()))


def cpu_cache_bytes() -> int | None:
    """Size of the CPU's largest (last-level) data or unified cache, from sysfs (byte)."""
    caches = cpu_caches()
    return caches[max(caches)] if caches else None


def memory_bytes() -> int | None:
    """Physical memory of the host (byte)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def available_memory(device) -> int | None:
    """Bytes free for new tensors on a ``torch.device``, or None if unknown."""
    import torch

    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def driver_version() -> str | None:
    """The NVIDIA driver's version from ``nvidia-smi``, or None."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if lines else None


def load_average() -> float | None:
    """The host's 1-minute load average, where the OS reports one."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def describe_device(device: Any) -> dict[str, Any]:
    """The run file's ``device`` record for a ``torch.device``."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        cache = getattr(props, "L2_cache_size", None)
        return {
            "type": "cuda",
            "name": props.name,
            "cache_bytes": int(cache) if cache else None,
            "memory_bytes": int(props.total_memory),
            "sm_count": int(props.multi_processor_count),
            "compute_capability": f"{props.major}.{props.minor}",
        }
    model = cpu_model()
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: None)()
    return {
        "type": "cpu",
        "name": model,
        "cache_bytes": cpu_cache_bytes(),
        "caches": {f"L{level}": size for level, size in cpu_caches().items()},
        "memory_bytes": memory_bytes(),
        "cpu_model": model,
        "threads": torch.get_num_threads(),
        "cpu_capability": capability,
    }


def describe_software(device: Any) -> dict[str, str | None]:
    """The run file's ``software`` record: Python, torch, CUDA (or HIP) and driver versions."""
    import torch

    device = torch.device(device)
    hip = getattr(torch.version, "hip", None)
    toolkit = torch.version.cuda or (f"hip {hip}" if hip else None)
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": toolkit,
        "driver": driver_version() if device.type == "cuda" else None,
    }


def no_cuda_message() -> str:
    """Why ``--device cuda`` cannot run here, in one line."""
    import torch

    built = torch.version.cuda or "none"
    return (
        f"--device cuda asked, but no CUDA device is available "
        f"(torch {torch.__version__}, built for CUDA {built})"
    )
