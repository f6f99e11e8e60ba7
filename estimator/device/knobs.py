"""The environment knobs that change device-level memory, read from launch scripts (never executed) and from
plan options: the caching allocator's configuration (``PYTORCH_CUDA_ALLOC_CONF`` / ``PYTORCH_NPU_ALLOC_CONF``)
and the communication libraries' buffer sizes (``HCCL_BUFFSIZE``, ``P2P_HCCL_BUFFSIZE``, ``NCCL_BUFFSIZE``) and
NVLS switches (``NCCL_NVLS_ENABLE``, ``NCCL_NVLS_CHUNKSIZE``, ``NCCL_NVLS_NCHANNELS``).

A value that cannot be read is an error naming the variable; an allocator key that does not change sizes is
accepted and ignored (listed in ``IGNORED_ALLOC_KEYS``); an unknown key is a warning with a did-you-mean.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ConfigError
from ..messages import Text, msg
from ..nearest import suggest
from ..units import MiB
from .allocator import AllocatorConfig

ALLOC_ENV = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
# env variable → the RunOptions field it sets (sizes in MB = MiB, as HCCL/torch_npu document them)
SIZE_ENV = {"HCCL_BUFFSIZE": "hccl_buffsize", "P2P_HCCL_BUFFSIZE": "p2p_hccl_buffsize"}
BYTES_ENV = {"NCCL_BUFFSIZE": "nccl_buffsize", "NCCL_NVLS_CHUNKSIZE": "nccl_nvls_chunksize"}  # in bytes
NVLS_ENV = {"NCCL_NVLS_ENABLE": "nccl_nvls_enable", "NCCL_NVLS_NCHANNELS": "nccl_nvls_nchannels"}
SIZE_KEYS = ("expandable_segments", "max_split_size_mb", "roundup_power2_divisions")
IGNORED_ALLOC_KEYS = ("garbage_collection_threshold", "release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
                      "pinned_num_register_threads", "pinned_use_background_threads", "backend",
                      "per_process_memory_fraction", "graph_capture_record_stream_reuse")


@dataclass(frozen=True)
class AllocConf:
    config: AllocatorConfig
    warnings: tuple[Text, ...] = ()


def parse_alloc_conf(text: str, where: str = "PYTORCH_CUDA_ALLOC_CONF") -> AllocConf:
    """``expandable_segments:True,max_split_size_mb:512`` → the sizes-relevant allocator configuration."""
    expandable = False
    max_split: int | None = None
    divisions = 0
    warnings: list[Text] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            raise ConfigError(msg("knobs.key-value-e", where=where, part=part), key=where)
        if key == "expandable_segments":
            if value.lower() not in ("true", "false"):
                raise ConfigError(msg("knobs.expandable_segments-takes-true", where=where, value=value), key=where)
            expandable = value.lower() == "true"
        elif key == "max_split_size_mb":
            max_split = int(_number(value, where, key) * MiB)
        elif key == "roundup_power2_divisions":
            if value.startswith("["):
                warnings.append(msg("W-ENV.roundup-divisions", where=where, value=value))
            else:
                divisions = int(_number(value, where, key))
        elif key in IGNORED_ALLOC_KEYS:
            continue
        else:
            near = suggest(key, SIZE_KEYS + IGNORED_ALLOC_KEYS)
            warnings.append(msg("W-ENV.unknown-key.near", where=where, key=key, near=near) if near else
                            msg("W-ENV.unknown-key", where=where, key=key))
    return AllocConf(AllocatorConfig(expandable, max_split, divisions), tuple(warnings))


def _number(value: str, where: str, key: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ConfigError(msg("knobs.takes-number", where=where, key=key, value=value), key=where) from None


def env_options(env: dict[str, str], where: str) -> tuple[dict[str, object], list[Text]]:
    """The ``options.*`` a launch script's environment sets (``{"options.alloc_conf": ...}``) and warnings."""
    out: dict[str, object] = {}
    warnings: list[Text] = []
    for name in ALLOC_ENV:
        if name in env:
            conf = parse_alloc_conf(env[name], f"{where}: {name}")
            warnings.extend(conf.warnings)
            out["options.alloc_conf"] = env[name]
    for name, field in SIZE_ENV.items():
        if name in env:
            out[f"options.{field}"] = _number(env[name], f"{where}: {name}", name) * MiB
    for name, field in BYTES_ENV.items():
        if name in env:
            out[f"options.{field}"] = _number(env[name], f"{where}: {name}", name)
    if "NCCL_NVLS_ENABLE" in env:  # 0 off, 1 forced, 2 (NCCL's default) where the switch has it
        value = env["NCCL_NVLS_ENABLE"].strip()
        if value not in ("0", "1", "2"):
            raise ConfigError(msg("knobs.nvls-enable", where=f"{where}: NCCL_NVLS_ENABLE", value=value),
                              key="NCCL_NVLS_ENABLE")
        out["options.nccl_nvls_enable"] = value != "0"
    if "NCCL_NVLS_NCHANNELS" in env:
        out["options.nccl_nvls_nchannels"] = int(_number(env["NCCL_NVLS_NCHANNELS"],
                                                         f"{where}: NCCL_NVLS_NCHANNELS", "NCCL_NVLS_NCHANNELS"))
    return out, warnings


def launch_env(lookup: Callable[[str], str | None], where: Callable[[str], str]) -> tuple[
        list[tuple[str, object, str]], list[Text]]:
    """The device-level knobs a launch script exports: ``[(options key, value, where)]`` and warnings.
    ``lookup(name)`` is the script's value of a variable (None when unset); ``where(name)`` names its line."""
    env = {name: value for name in (*ALLOC_ENV, *SIZE_ENV, *BYTES_ENV, *NVLS_ENV)
           if (value := lookup(name)) is not None}
    options, warnings = env_options(env, "launch script")
    by_option = {"options.alloc_conf": ALLOC_ENV,
                 **{f"options.{f}": (n,) for n, f in (*SIZE_ENV.items(), *BYTES_ENV.items(), *NVLS_ENV.items())}}
    out = []
    for key, value in options.items():
        name = next(n for n in by_option[key] if n in env)
        out.append((key, value, where(name)))
    return out, warnings


__all__ = ["ALLOC_ENV", "BYTES_ENV", "NVLS_ENV", "SIZE_ENV", "AllocConf", "env_options", "launch_env",
           "parse_alloc_conf"]
