"""在 ``torch.profiler`` 下像 ``python script.py`` 那样运行一个脚本，供
:mod:`roofline_book.measure.profile.profiling` 对应到模型。

torch 在需要它的函数内部才导入。
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["ScriptError", "as_main", "profile_script", "profiler"]


def profiler(*, cuda: bool | None = None) -> Any:
    """一个记录 :func:`attribute` 所需内容的 ``torch.profiler.profile``。

    记录 CPU 活动，CUDA 可用时也记录 CUDA 活动（``cuda=None``）；记录输入 shape
    （``record_shapes=True``）和 profiler 的 FLOPs（``with_flops=True``）。kineto 每次
    开始和结束 profile 都会往 stderr 写一条提示；这里设置 ``KINETO_LOG_LEVEL=6``
    （已设置时不改）让 kineto 的日志安静下来，Python 中的错误照样抛出。
    """
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    import torch
    from torch.profiler import ProfilerActivity, profile

    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    return profile(activities=activities, record_shapes=True, with_flops=True)


class ScriptError(RuntimeError):
    """要 profile 的脚本无法运行、抛出了异常，或没有运行任何 torch 算子。"""


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """把写到 stdout 的一切（``print``，以及 C 扩展和子进程写到文件描述符 1 的）送到 stderr。"""
    sys.stdout.flush()
    try:
        out, err = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream without a descriptor
        out = err = -1
    saved = os.dup(out) if out >= 0 else -1
    if saved >= 0:
        os.dup2(err, out)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved >= 0:
            os.dup2(saved, out)
            os.close(saved)


@contextlib.contextmanager
def as_main(path: str, argv: Sequence[str] = ()) -> Iterator[str]:
    """准备像 ``python path ARGV...`` 那样运行 ``path``，给出要交给 ``runpy.run_path`` 的绝对路径。

    ``sys.argv = [path, *argv]``；脚本所在的文件夹排在 ``sys.path`` 的最前面（于是能 import 旁边的
    模块）；工作目录不变（脚本中的相对路径相对于调用者的工作目录，与 ``python`` 一样）；写到 stdout
    的内容改写到 stderr。退出时 ``sys.argv``、``sys.path`` 与工作目录恢复原样（脚本 ``chdir``
    过也一样），从脚本文件夹 import 的模块从 ``sys.modules`` 中移除。
    """
    script = os.path.abspath(path)
    folder = os.path.dirname(script)
    saved_argv, saved_path, cwd = sys.argv[:], sys.path[:], os.getcwd()
    modules = set(sys.modules)
    sys.argv = [path, *argv]
    sys.path.insert(0, folder)
    try:
        with _stdout_to_stderr():
            yield script
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(cwd)
        for name in set(sys.modules) - modules:
            where = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.dirname(os.path.abspath(where)) == folder:
                del sys.modules[name]


def profile_script(path: str, argv: Sequence[str] = (), *, cuda: bool | None = None) -> Any:
    """在 ``torch.profiler`` 下运行 ``path`` 处的 Python 脚本，返回 profile。

    脚本像 ``python path ARGV...`` 那样作为 ``__main__`` 运行（:func:`as_main`）：它的文件夹
    在 ``sys.path`` 最前面，工作目录是调用者的，``__file__`` 是它的绝对路径；它写到 stdout 的
    内容改写到 stderr，让 stdout 只留给结果（``--json``）。

    profiler 记录 CPU 活动，CUDA 可用时也记录 CUDA 活动（``cuda=None``），并记录输入
    shape 和 FLOPs。kineto 自己写到 stderr 的开始、结束提示通过 ``KINETO_LOG_LEVEL``
    关掉，除非它已经设置。

    Raises
    ------
    ScriptError
        文件不存在、脚本抛出异常（``KeyboardInterrupt`` 这类 ``BaseException`` 也算）或以非 0
        状态退出，或它没有运行任何被记录的 torch 算子。
    """
    if not os.path.isfile(path):
        raise ScriptError(f"script {path!r} does not exist or is not a file")
    import torch

    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    with as_main(path, argv) as script, profiler(cuda=use_cuda) as prof:
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ScriptError(f"script {path!r} exited with status {exc.code}") from None
        except BaseException as exc:  # the user's script: whatever it raises is reported
            where = _last_frame(exc, script)
            raise ScriptError(
                f"script {path!r} raised {type(exc).__name__}: {exc}{where}"
            ) from None
        if use_cuda:
            torch.cuda.synchronize()
    if not any(e.name.startswith("aten::") for e in prof.events()):
        raise ScriptError(
            f"script {path!r} ran no torch operator that the profiler recorded: nothing to "
            "attribute (a script that starts its own torch.profiler stops this one)"
        )
    return prof


def _last_frame(exc: BaseException, path: str) -> str:
    """脚本中 traceback 最深一帧的 `` (line N)``，没有则为空。"""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return "" if line is None else f" (line {line})"
