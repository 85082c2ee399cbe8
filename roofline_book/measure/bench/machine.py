"""一次 run 所测机器的情况：设备、cache、内存、软件、负载。

每个函数读取操作系统、torch 或驱动报告的内容，什么也没报告时返回 None；这里不做任何测量。
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from ... import __version__


def cpu_model() -> str:
    """CPU 的型号名称（``/proc/cpuinfo``，否则取 ``platform`` 给出的）。"""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def parse_cache_size(text: str) -> int:
    """把 sysfs 中的 cache 大小（``"32K"``、``"1024K"``、``"105M"``）换成字节数。

    Examples
    --------
    >>> parse_cache_size("32K"), parse_cache_size("105M\\n")
    (32768, 110100480)
    """
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def cpu_caches() -> dict[int, int]:
    """按层级给出 CPU 的数据 cache 或统一 cache，按一个核在 sysfs 中看到的（byte）。

    操作系统什么也没报告时为空 dict。
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
    """CPU 最大的（末级）数据 cache 或统一 cache 的大小，来自 sysfs（byte）。"""
    caches = cpu_caches()
    return caches[max(caches)] if caches else None


def memory_bytes() -> int | None:
    """宿主机的物理内存（byte）。"""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def available_memory(device) -> int | None:
    """``torch.device`` 上可供新 tensor 使用的空闲字节数，未知时为 None。"""
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
    """``nvidia-smi`` 给出的 NVIDIA 驱动版本，没有时为 None。"""
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
    """宿主机 1 分钟的平均负载，操作系统报告时给出。"""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def describe_device(device: Any) -> dict[str, Any]:
    """一个 ``torch.device`` 在 run file 中的 ``device`` 记录。"""
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
    """run file 中的 ``software`` 记录：Python、torch、CUDA（或 HIP）与驱动的版本，以及写下它的
    roofline-book 的版本。
    """
    import torch

    device = torch.device(device)
    hip = getattr(torch.version, "hip", None)
    toolkit = torch.version.cuda or (f"hip {hip}" if hip else None)
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": toolkit,
        "driver": driver_version() if device.type == "cuda" else None,
        "roofline_book": __version__,
    }


def no_cuda_message() -> str:
    """为什么这里不能运行 ``--device cuda``，写成一行。"""
    import torch

    built = torch.version.cuda or "none"
    return (
        f"--device cuda asked, but no CUDA device is available "
        f"(torch {torch.__version__}, built for CUDA {built})"
    )
